//! Hostile programs: every limit and every denied capability ends in a typed error, and the next
//! run goes on as if nothing happened.

use std::time::Duration;

use serde_json::json;
use signet_sandbox::{Limits, Sandbox, SandboxError};

/// A sandbox with quick limits, and a check that it still runs ordinary code.
fn sandbox() -> Sandbox {
    Sandbox::new().with_limits(
        Limits::default()
            .with_time(Duration::from_millis(200))
            .with_memory_bytes(16 << 20),
    )
}

fn still_works(sandbox: &Sandbox) {
    assert_eq!(sandbox.run("40 + 2").unwrap().value, json!(42));
}

/// Code, the sandbox it runs in, and whether its error is the one expected.
type Case = (&'static str, Sandbox, fn(&SandboxError) -> bool);

#[test]
fn each_limit_ends_the_run_in_its_own_error_and_the_next_run_goes_on() {
    let quick = sandbox();
    let cases: Vec<Case> = vec![
        (
            "while (true) {}",
            quick.clone(),
            |e| matches!(e, SandboxError::TimeLimit { limit } if *limit == Duration::from_millis(200)),
        ),
        (
            "for (;;) {}",
            quick
                .clone()
                .with_limits(Limits::default().with_max_steps(3)),
            |e| matches!(e, SandboxError::StepLimit { limit: 3 }),
        ),
        (
            "let a = []; while (true) a.push(new Array(1000).fill(1))",
            quick.clone(),
            |e| matches!(e, SandboxError::OutOfMemory { limit } if *limit == 16 << 20),
        ),
        ("new Array(1e9).fill(1)", quick.clone(), |e| {
            matches!(e, SandboxError::OutOfMemory { .. })
        }),
        (
            "let p = Promise.resolve(); for (let i = 0; i < 1e6; i++) p = p.then(() => 1)",
            quick.clone(),
            |e| matches!(e, SandboxError::OutOfMemory { .. }),
        ),
        // Strings are ropes: doubling one reaches the engine's longest string first.
        (
            "let s = 'x'; while (true) { s = s + s }",
            quick.clone(),
            |e| {
                matches!(e, SandboxError::OutOfMemory { .. })
                    || matches!(e, SandboxError::Thrown { message, .. } if message == "string too long")
            },
        ),
        // Catastrophic backtracking is interrupted like any loop.
        ("/(a+)+$/.test('a'.repeat(40) + 'b')", quick.clone(), |e| {
            matches!(e, SandboxError::TimeLimit { .. })
        }),
        ("function f() { return f() } f()", quick.clone(), |e| {
            matches!(e, SandboxError::StackOverflow { .. })
        }),
        (
            "let v = []; for (let i = 0; i < 100000; i++) v = [v]; JSON.stringify(v).length",
            quick.clone(),
            |e| matches!(e, SandboxError::StackOverflow { .. }),
        ),
        (
            "let a = {}; a.self = a; a",
            quick.clone(),
            |e| matches!(e, SandboxError::NotJson { reason } if reason.contains("circular")),
        ),
        (
            "let v = []; for (let i = 0; i < 100000; i++) v = [v]; v",
            quick.clone(),
            |e| matches!(e, SandboxError::NotJson { .. }),
        ),
        (
            "'x'.repeat(2 << 20)",
            quick.clone(),
            |e| matches!(e, SandboxError::ResultTooLarge { limit } if *limit == 1 << 20),
        ),
    ];
    for (code, sandbox, expected) in cases {
        let error = sandbox.run(code).expect_err(code);
        assert!(expected(&error), "{code}: {error:?}");
        still_works(&sandbox);
    }
}

#[test]
fn what_the_code_throws_is_typed_with_where() {
    let sandbox = sandbox();
    match sandbox.run("let x = ;") {
        Err(SandboxError::Syntax { message, at }) => {
            assert!(!message.is_empty());
            assert!(at.is_some_and(|at| at.starts_with("eval_script:1")));
        }
        other => panic!("{other:?}"),
    }
    match sandbox.run("null.f()") {
        Err(SandboxError::Thrown { name, at, .. }) => {
            assert_eq!(name, "TypeError");
            assert!(at.is_some());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        sandbox.run("throw {code: 5}").unwrap_err(),
        SandboxError::Thrown {
            name: "value".into(),
            message: r#"{"code":5}"#.into(),
            at: None
        }
    );
}

#[test]
fn the_host_is_out_of_reach_unless_granted() {
    let sandbox = sandbox();
    let reach = "[typeof require, typeof process, typeof fetch, typeof XMLHttpRequest, \
                 typeof std, typeof os, typeof Deno, typeof Bun, typeof WebSocket]";
    assert_eq!(
        sandbox.run(reach).unwrap().value,
        json!(vec!["undefined"; 9])
    );
    // No module loader: a dynamic import never reaches a file.
    let imported = sandbox
        .run("let r = 'pending'; import('/etc/passwd').then(() => r = 'loaded', e => r = String(e)); r")
        .unwrap();
    assert_eq!(imported.value, json!("pending"));
    assert!(matches!(
        sandbox.run("readFile('/etc/passwd')"),
        Err(SandboxError::Thrown { name, .. }) if name == "ReferenceError"
    ));
    // Each run starts fresh: nothing one leaves behind is seen by the next.
    sandbox
        .run("globalThis.leak = 1; Object.prototype.evil = 2")
        .unwrap();
    assert_eq!(
        sandbox.run("[typeof leak, ({}).evil]").unwrap().value,
        json!(["undefined", null])
    );
}

#[test]
fn granted_functions_take_and_give_json_and_their_errors_are_thrown() {
    let sandbox = sandbox()
        .grant("add", |args| {
            let (a, b) = (args["a"].as_i64(), args["b"].as_i64());
            match (a, b) {
                (Some(a), Some(b)) => Ok(json!(a + b)),
                _ => Err("`a` and `b` must be integers".into()),
            }
        })
        .grant("weird name", |_| Ok(json!("reached")))
        .grant("broken", |_| panic!("a bug in the host"));
    assert_eq!(sandbox.run("add({a: 40, b: 2})").unwrap().value, json!(42));
    match sandbox.run("add({a: 'x'})") {
        Err(SandboxError::Thrown { name, message, .. }) => {
            assert_eq!(name, "Error");
            assert_eq!(message, "add: `a` and `b` must be integers");
        }
        other => panic!("{other:?}"),
    }
    // The code can catch a granted function's error and go on.
    assert_eq!(
        sandbox
            .run("try { add({}) } catch (e) { 'caught: ' + e.message }")
            .unwrap()
            .value,
        json!("caught: add: `a` and `b` must be integers")
    );
    assert_eq!(
        sandbox.run("globalThis['weird name']()").unwrap().value,
        json!("reached")
    );
    // A host function that panics is an error the code sees; the run and the process go on.
    assert_eq!(
        sandbox
            .run("try { broken() } catch (e) { e.message }")
            .unwrap()
            .value,
        json!("broken: the host function panicked")
    );
    assert_eq!(
        sandbox.granted().collect::<Vec<_>>(),
        ["add", "weird name", "broken"]
    );
}

#[test]
fn printing_is_kept_within_the_output_limit() {
    let sandbox = sandbox().with_limits(Limits::default().with_max_output_bytes(64));
    let run = sandbox
        .run("console.log('a', 1, {b: [2]}); for (let i = 0; i < 100; i++) console.log('line', i); 'done'")
        .unwrap();
    assert!(run.printed.starts_with("a 1 {\"b\":[2]}\nline 0\n"));
    assert!(run.printed.len() <= 64 && run.printed_cut);
    assert_eq!(run.value, json!("done"));
}

#[test]
fn huge_and_deep_sources_are_refused_or_run_never_crash() {
    let sandbox = sandbox();
    // Over a megabyte of source.
    let long = format!("{}1", "1 + ".repeat(300_000));
    match sandbox.run(&long) {
        Ok(run) => assert_eq!(run.value, json!(300_001)),
        Err(error) => assert!(
            matches!(
                error,
                SandboxError::StackOverflow { .. } | SandboxError::OutOfMemory { .. }
            ),
            "{error:?}"
        ),
    }
    // Nesting deep enough to exhaust a parser that does not check its stack.
    let deep = format!("{}1{}", "(".repeat(200_000), ")".repeat(200_000));
    let error = sandbox.run(&deep).unwrap_err();
    assert!(
        matches!(
            error,
            SandboxError::StackOverflow { .. } | SandboxError::Syntax { .. }
        ),
        "{error:?}"
    );
    let arrays = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    assert!(sandbox.run(&arrays).is_err());
    still_works(&sandbox);
}

#[test]
fn a_thread_with_a_small_stack_can_run_deep_code_safely() {
    let sandbox = sandbox();
    let small = std::thread::Builder::new()
        .stack_size(64 << 10)
        .spawn(move || sandbox.run("function f(n) { return n ? f(n - 1) + 1 : 0 } f(1e6)"))
        .unwrap();
    assert!(matches!(
        small.join().unwrap(),
        Err(SandboxError::StackOverflow { .. })
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_from_async_code_on_a_blocking_thread() {
    let sandbox = sandbox();
    let (a, b) = tokio::join!(
        sandbox.run_async("6 * 7"),
        sandbox.run_async("while (true) {}")
    );
    assert_eq!(a.unwrap().value, json!(42));
    assert!(matches!(b, Err(SandboxError::TimeLimit { .. })));
}
