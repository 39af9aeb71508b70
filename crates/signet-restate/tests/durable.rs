//! Agents on a real Restate server (installed from npm into the cache on first use): a worker
//! killed in the middle of a run, an approval given over HTTP after the run suspended.
//!
//! Workers are this test binary run again as `durable worker --exact` with
//! `SIGNET_RESTATE_TEST_WORKER=<port>`; several sit behind a small TCP load balancer, one
//! Restate deployment, as they would behind any load balancer in production.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use signet::data::Example;
use signet::lm::{Completion, Lm, LmError, LmRequest};
use signet::module::{CallConfig, Decision, DynReAct, Step};
use signet::prelude::*;
use signet::tool::FnTool;
use signet_restate::{
    Agents, Evaluations, Event, Ingress, IngressError, Progress, RestateServer, RunRequest, Worker,
    free_port, load_balancer,
};
use tokio::process::{Child, Command};

const WORKER_ENV: &str = "SIGNET_RESTATE_TEST_WORKER";
const DIR_ENV: &str = "SIGNET_RESTATE_TEST_DIR";
const KEY_ENV: &str = "SIGNET_RESTATE_TEST_IDENTITY_KEY";

/// A model that calls `record` with n = 0, 1, 2 (one per step), then finishes; or, for the
/// `payer`, calls `pay` once, then finishes. Its reply depends only on the request, so a run
/// replayed on another worker gets the same replies. With `gate`, the third step call waits
/// for a file named `go` in that directory, after writing `waiting.<pid>` there.
struct ScriptLm {
    gate: Option<PathBuf>,
}

fn step(thought: &str, tool: &str, args: Value) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
         [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

impl ScriptLm {
    async fn reply(&self, request: &LmRequest) -> String {
        let system = &request.messages[0].content;
        let last = &request.messages[request.messages.len() - 1].content;
        if !system.contains("next_tool_name") {
            return "[[ ## reasoning ## ]]\nThe tools answered.\n\n[[ ## answer ## ]]\ndone\n\n\
                    [[ ## completed ## ]]"
                .to_owned();
        }
        let done = last.matches("[[ ## observation_").count();
        if system.contains("(1) pay,") {
            return match done {
                0 => step("Pay first.", "pay", json!({"amount": 5})),
                _ => step("Paid.", "finish", json!({})),
            };
        }
        if done == 2
            && let Some(dir) = &self.gate
        {
            std::fs::write(dir.join(format!("waiting.{}", std::process::id())), "").unwrap();
            while !dir.join("go").exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        match done {
            n @ 0..=2 => step(&format!("Record {n}."), "record", json!({"n": n})),
            _ => step("All recorded.", "finish", json!({})),
        }
    }
}

impl Lm for ScriptLm {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        async move { Ok(Completion::text(self.reply(request).await)) }.boxed()
    }

    fn model(&self) -> &str {
        "script"
    }
}

/// Appends `line` to `dir/calls.log` (the tools count their calls there, across processes).
fn count(dir: &Path, line: String) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("calls.log"))
        .unwrap();
    // One write per line: appends from several processes then never interleave.
    file.write_all(format!("{line}\n").as_bytes()).unwrap();
}

fn calls(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The agents every worker serves (and the reference run uses).
fn agents(dir: &Path, gate: bool) -> Agents {
    let lm = Arc::new(ScriptLm {
        gate: gate.then(|| dir.to_owned()),
    });
    let record_dir = dir.to_owned();
    let record = FnTool::builder("record")
        .description("Record a number.")
        .schema(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .sync_fn(move |args: Value| {
            count(&record_dir, format!("record {}", args["n"]));
            Ok::<_, String>(format!("recorded {}", args["n"]))
        });
    let pay_dir = dir.to_owned();
    let pay = FnTool::builder("pay")
        .description("Pay an amount.")
        .schema(json!({"type": "object", "properties": {"amount": {"type": "integer"}}, "required": ["amount"]}))
        .confirm(true)
        .sync_fn(move |args: Value| {
            count(&pay_dir, format!("pay {}", args["amount"]));
            Ok::<_, String>(format!("paid {}", args["amount"]))
        });
    let signature = || "question -> answer".parse().unwrap();
    Agents::new()
        .agent(
            "recorder",
            DynReAct::new(signature()).tool(record).with_lm(lm.clone()),
        )
        .agent("payer", DynReAct::new(signature()).tool(pay).with_lm(lm))
}

/// Add two numbers.
#[derive(Signature)]
struct AddUp {
    #[input]
    a: i64,
    #[input]
    b: i64,
    #[output]
    sum: i64,
}

/// A model that adds the two numbers of its request, slowly (20 ms).
struct Adder;

impl Lm for Adder {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let text = &request.messages[request.messages.len() - 1].content;
            let number = |field: &str| -> i64 {
                let marker = format!("[[ ## {field} ## ]]\n");
                let start = text
                    .find(&marker)
                    .map_or(text.len(), |at| at + marker.len());
                let line = text[start..].lines().next().unwrap_or_default();
                line.trim().parse().unwrap_or_default()
            };
            let sum = number("a") + number("b");
            Ok(Completion::text(format!(
                "[[ ## sum ## ]]\n{sum}\n\n[[ ## completed ## ]]"
            )))
        }
        .boxed()
    }

    fn model(&self) -> &str {
        "adder"
    }
}

/// The programs every worker scores with: `adder`, whose metric counts its calls in `dir`.
fn evaluations(dir: &Path) -> Evaluations {
    let dir = dir.to_owned();
    let metric = move |example: &Example, output: &AddUpOutput| {
        count(&dir, format!("score {}", example.values()["a"]));
        output.sum == example.values()["sum"].as_i64().unwrap()
    };
    Evaluations::new().program("adder", Predict::<AddUp>::new().with_lm(Adder), metric)
}

/// Run as a worker when the parent test asks for one; a plain test run returns at once.
#[test]
fn worker() {
    let Ok(port) = std::env::var(WORKER_ENV) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR_ENV).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let worker = Worker::new()
        .agents(agents(&dir, true))
        .evaluations(evaluations(&dir))
        .identity_key(std::env::var(KEY_ENV).unwrap());
    runtime
        .block_on(signet_restate::serve(
            format!("127.0.0.1:{port}").parse().unwrap(),
            worker,
        ))
        .unwrap();
}

/// A worker serving only requests signed with the key `identity_key` is the public half of.
fn spawn_worker(port: u16, dir: &Path, identity_key: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["worker", "--exact", "--nocapture", "--test-threads=1"])
        .env(WORKER_ENV, port.to_string())
        .env(DIR_ENV, dir)
        .env(KEY_ENV, identity_key)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

/// A server, and `n` workers behind a load balancer registered as its one deployment.
async fn cluster(n: usize, dir: &Path) -> (RestateServer, Vec<Child>) {
    let server = RestateServer::start()
        .await
        .unwrap_or_else(|e| panic!("the Restate server must start: {e}"));
    let ports: Vec<u16> = (0..n).map(|_| free_port().unwrap()).collect();
    let workers = ports
        .iter()
        .map(|p| spawn_worker(*p, dir, server.identity_key()))
        .collect();
    let lb = load_balancer(ports).await.unwrap();
    server
        .register(&format!("http://127.0.0.1:{lb}"))
        .await
        .unwrap();
    (server, workers)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("signet-restate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn question(agent: &str, text: &str) -> RunRequest {
    RunRequest {
        agent: agent.into(),
        inputs: json!({"question": text}).as_object().unwrap().clone(),
        max_iters: None,
    }
}

/// What a step did, without its timing.
fn shape(steps: &[Step]) -> Vec<Value> {
    steps
        .iter()
        .map(|s| {
            json!([
                s.index,
                s.thought,
                s.tool_name,
                s.tool_args,
                s.observation.as_value()
            ])
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_worker_is_killed_completes_on_another_with_every_tool_called_once() {
    let dir = scratch("kill");
    let (server, mut workers) = cluster(2, &dir).await;
    let ingress = server.ingress();
    ingress
        .start("kill-1", &question("recorder", "Record three numbers."))
        .await
        .unwrap();

    // The third step call waits in a worker; kill that worker there.
    let waiting = loop {
        let found = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .find_map(|name| name.strip_prefix("waiting.")?.parse::<u32>().ok());
        if let Some(pid) = found {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(calls(&dir), ["record 0", "record 1"]);
    let victim = workers
        .iter()
        .position(|w| w.id() == Some(waiting))
        .expect("the waiting process is one of the workers");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(waiting as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let _ = workers[victim].wait().await;
    std::fs::write(dir.join("go"), "").unwrap();

    let result = tokio::time::timeout(Duration::from_secs(60), ingress.result("kill-1"))
        .await
        .expect("the run completes on the other worker")
        .unwrap();
    assert_eq!(result.outputs["answer"], "done");
    assert_eq!(calls(&dir), ["record 0", "record 1", "record 2"]);

    // The same trajectory as a run that was never interrupted (in process, no journal).
    let reference_dir = scratch("kill-reference");
    let reference = agents(&reference_dir, false);
    let agent = reference_agent(&reference, "recorder");
    let run = agent
        .forward(
            json!({"question": "Record three numbers."})
                .as_object()
                .unwrap(),
            &CallConfig::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        shape(&result.trajectory.steps),
        shape(&run.trajectory.steps)
    );
    assert_eq!(result.outputs, run.outputs);

    // The run's events list each journaled call once: 5 LM calls (4 steps, the extractor) and
    // 3 tool calls.
    let status = ingress.status("kill-1").await.unwrap();
    let tools = status
        .events
        .iter()
        .filter(|e| matches!(e, Event::Tool { .. }))
        .count();
    assert_eq!((status.events.len(), tools), (8, 3));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&reference_dir).ok();
}

fn reference_agent(agents: &Agents, name: &str) -> DynReAct {
    agents.get(name).expect("the agent is registered").clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_request_to_a_worker_is_refused() {
    // Every test here runs its workers with the server's identity key, and their runs pass:
    // Restate signs what it sends. A request that Restate did not sign is refused.
    let keys = signet_restate::IdentityKeys::generate().unwrap();
    let port = free_port().unwrap();
    let dir = scratch("forged");
    let worker = Worker::new()
        .agents(agents(&dir, true))
        .identity_key(keys.public_key());
    tokio::spawn(signet_restate::serve(
        format!("127.0.0.1:{port}").parse().unwrap(),
        worker,
    ));
    // Restate speaks HTTP/2 to workers, without TLS.
    let http = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let forged = |path: &'static str| {
        http.post(format!("http://127.0.0.1:{port}{path}"))
            .header("content-type", "application/vnd.restate.invocation.v5")
            .header("x-restate-jwt-v1", "e30.e30.forged")
            .body(vec![0u8; 64])
            .send()
    };
    let mut status = None;
    for _ in 0..50 {
        match forged("/invoke/SignetAgent/run").await {
            Ok(reply) => {
                status = Some(reply.status().as_u16());
                break;
            }
            // Not listening yet.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert_eq!(status, Some(401), "a forged invocation is refused");
    let discover = http
        .get(format!("http://127.0.0.1:{port}/discover"))
        .send()
        .await
        .unwrap();
    assert_eq!(discover.status(), 401, "so is an unsigned discovery");
    assert!(calls(&dir).is_empty(), "nothing ran: {:?}", calls(&dir));

    // Beyond loopback, a worker without a key is not served at all; a bad key is named.
    let open = signet_restate::serve("0.0.0.0:0".parse().unwrap(), agents(&dir, true)).await;
    assert!(
        matches!(open, Err(signet_restate::ServeError::Unprotected { .. })),
        "{open:?}"
    );
    let bad = signet_restate::serve(
        "127.0.0.1:0".parse().unwrap(),
        Worker::from(agents(&dir, true)).identity_key("publickeyv1_nope"),
    )
    .await;
    assert!(
        matches!(&bad, Err(signet_restate::ServeError::BadKey { key, .. }) if key == "publickeyv1_nope"),
        "{bad:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_given_later_over_http_resumes_the_run() {
    let server = RestateServer::start()
        .await
        .unwrap_or_else(|e| panic!("the Restate server must start: {e}"));
    let dir = scratch("approve");
    let port = free_port().unwrap();
    let _worker = spawn_worker(port, &dir, server.identity_key());
    server
        .register(&format!("http://127.0.0.1:{port}"))
        .await
        .unwrap();
    let ingress: Ingress = server.ingress();

    let error = ingress
        .run("unknown-1", &question("nobody", "?"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, IngressError::Status { status: 404, body, .. } if body.contains("no agent named `nobody`")),
        "{error}"
    );

    // Only the holder of the run's decision token may approve its payment.
    let token = ingress
        .start_decided("pay-1", &question("payer", "Pay 5."))
        .await
        .unwrap();
    // Someone follows the run as it goes.
    let watcher = {
        let ingress = ingress.clone();
        tokio::spawn(async move {
            use futures::StreamExt;
            let every = Duration::from_millis(50);
            let reports: Vec<_> = ingress.watch("pay-1", every).collect().await;
            reports
                .into_iter()
                .map(Result::unwrap)
                .collect::<Vec<Progress>>()
        })
    };
    let status = ingress
        .wait_for_pending("pay-1", Duration::from_secs(30))
        .await
        .unwrap()
        .expect("the run waits for an approval");
    let pending = status.pending.unwrap();
    assert_eq!(pending.calls.len(), 1);
    assert_eq!(pending.calls[0].tool, "pay");
    assert!(
        calls(&dir).is_empty(),
        "nothing is paid before the approval"
    );

    // Whoever reaches the ingress without the token cannot approve it.
    let decisions = BTreeMap::from([(pending.calls[0].id.clone(), Decision::Approve)]);
    for refused in [
        ingress.decide("pay-1", &decisions).await,
        ingress
            .decide_with_token("pay-1", "guessed", &decisions)
            .await,
    ] {
        let error = refused.unwrap_err();
        assert!(
            matches!(&error, IngressError::Status { status: 403, body, .. } if body.contains("decision token")),
            "{error}"
        );
    }
    // A decision that leaves the waiting call out is refused; the run keeps waiting.
    let error = ingress
        .decide_with_token("pay-1", &token, &BTreeMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, IngressError::Status { status: 409, .. }),
        "{error}"
    );
    assert!(calls(&dir).is_empty(), "nothing is paid without the token");

    // The person answers later (seconds here; hours would do as well: the run is suspended).
    tokio::time::sleep(Duration::from_secs(2)).await;
    ingress
        .decide_with_token("pay-1", &token, &decisions)
        .await
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(60), ingress.result("pay-1"))
        .await
        .expect("the run finishes after the approval")
        .unwrap();
    assert_eq!(result.outputs["answer"], "done");
    assert_eq!(calls(&dir), ["pay 5"]);
    let seen: Vec<String> = watcher
        .await
        .unwrap()
        .iter()
        .map(|report| match report {
            Progress::Event(Event::Lm { .. }) => "lm".to_owned(),
            Progress::Event(Event::Tool { tool, result, .. }) => format!("{tool} -> {result}"),
            Progress::Waiting(pending) => format!("waiting for {}", pending.calls[0].tool),
            Progress::Finished(run) => format!("finished: {}", run.outputs["answer"]),
        })
        .collect();
    assert_eq!(
        seen,
        [
            "lm",
            "waiting for pay",
            "pay -> \"paid 5\"",
            "lm",
            "lm",
            "finished: \"done\""
        ]
    );
    let steps = shape(&result.trajectory.steps);
    assert_eq!(steps[0][2], "pay");
    assert_eq!(steps[0][4], "paid 5");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn decisions_that_do_not_fit_are_409_and_the_run_keeps_waiting_for_one_that_does() {
    let server = RestateServer::start()
        .await
        .unwrap_or_else(|e| panic!("the Restate server must start: {e}"));
    let dir = scratch("misfit");
    let port = free_port().unwrap();
    let _worker = spawn_worker(port, &dir, server.identity_key());
    server
        .register(&format!("http://127.0.0.1:{port}"))
        .await
        .unwrap();
    let ingress: Ingress = server.ingress();

    // An id with `/`, `?`, `#` and `%` names one run: it is escaped into the URLs.
    let id = "pay/2?x=%41#y";
    let token = ingress
        .start_decided(id, &question("payer", "Pay 5."))
        .await
        .unwrap();
    let status = ingress
        .wait_for_pending(id, Duration::from_secs(30))
        .await
        .unwrap()
        .expect("the run waits for an approval");
    let call = status.pending.unwrap().calls[0].id.clone();
    assert!(
        matches!(
            ingress.status("pay").await,
            Ok(signet_restate::Status { pending: None, .. })
        ),
        "the id's prefix is another (empty) run"
    );
    assert!(matches!(
        ingress.status("..").await,
        Err(IngressError::InvalidId { .. })
    ));

    let misfits = [
        // A call it does not wait on, beside the right one.
        BTreeMap::from([
            (call.clone(), Decision::Approve),
            ("step_9".to_owned(), Decision::Approve),
        ]),
        // Edited arguments the tool's schema refuses.
        BTreeMap::from([(call.clone(), Decision::Edit(json!({"amount": "five"})))]),
        BTreeMap::from([(call.clone(), Decision::Edit(json!({})))]),
    ];
    for decisions in &misfits {
        let error = ingress
            .decide_with_token(id, &token, decisions)
            .await
            .unwrap_err();
        assert!(
            matches!(&error, IngressError::Status { status: 409, body, .. } if body.contains("keeps waiting")),
            "{decisions:?}: {error}"
        );
    }
    // The same id twice (a JSON object may hold a key twice): refused, not the last one taken.
    let twice =
        format!(r#"{{"{call}": {{"decision": "approve"}}, "{call}": {{"decision": "deny"}}}}"#);
    let url = format!(
        "{}/SignetAgent/pay%2F2%3Fx%3D%2541%23y/decide",
        server.ingress_url()
    );
    let response = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header(signet_restate::DECISION_TOKEN_HEADER, &token)
        .body(twice)
        .send()
        .await
        .unwrap();
    let status_code = response.status().as_u16();
    let body = response.text().await.unwrap();
    assert_eq!(status_code, 409, "{body}");
    assert!(body.contains("decided twice"), "{body}");

    // Still waiting, nothing paid; a decision that fits goes on.
    let status = ingress.status(id).await.unwrap();
    assert_eq!(status.pending.expect("still waiting").calls[0].id, call);
    assert!(calls(&dir).is_empty());
    let decisions = BTreeMap::from([(call, Decision::Edit(json!({"amount": 7})))]);
    // A run started without a token cannot be decided by anyone on this worker.
    let keyless = ingress.decide("started-without-a-token", &decisions).await;
    assert!(
        matches!(&keyless, Err(IngressError::Status { status: 403, body, .. }) if body.contains("without a decision token")),
        "{keyless:?}"
    );
    ingress
        .decide_with_token(id, &token, &decisions)
        .await
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(60), ingress.result(id))
        .await
        .expect("the run finishes after the decision")
        .unwrap();
    assert_eq!(result.outputs["answer"], "done");
    assert_eq!(calls(&dir), ["pay 7"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_evaluation_survives_a_killed_worker_and_a_restarted_client() {
    let dir = scratch("batch");
    let (server, mut workers) = cluster(3, &dir).await;
    let ingress = server.ingress();
    let examples: Vec<Example> = (0..200)
        .map(|i| Example::new(json!({"a": i, "b": 2 * i, "sum": 3 * i})).with_inputs(["a", "b"]))
        .collect();

    // A client sends the examples and is gone; a worker dies while they are scored.
    ingress
        .submit_evaluation("adder", "batch-1", &examples, 16)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    while calls(&dir).len() < 20 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no examples scored: {:?}",
            ingress
                .evaluate("adder", "batch-1", &examples[..1], 1)
                .await
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    workers[0].start_kill().unwrap();
    let _ = workers[0].wait().await;

    // Another client resumes the evaluation: every example has one result, all correct.
    let report = tokio::time::timeout(
        Duration::from_secs(120),
        ingress.evaluate("adder", "batch-1", &examples, 16),
    )
    .await
    .expect("the evaluation completes on the other workers")
    .unwrap();
    assert_eq!(report.results.len(), 200);
    assert_eq!((report.errors(), report.average()), (0, 1.0));
    let ids: std::collections::BTreeSet<&str> =
        report.results.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), 200);
    assert_eq!(report.results[7].output, Some(json!({"sum": 21})));
    // Every example was scored; one whose worker died mid-example was scored again elsewhere.
    let scored = calls(&dir);
    let distinct: std::collections::BTreeSet<&String> = scored.iter().collect();
    assert_eq!(distinct.len(), 200);

    // Asked again, nothing is scored again: the results are Restate's.
    let before = scored.len();
    let again = ingress
        .evaluate("adder", "batch-1", &examples, 16)
        .await
        .unwrap();
    assert_eq!(again, report);
    assert_eq!(calls(&dir).len(), before);

    let error = ingress
        .evaluate("adder", "bad key", &examples[..1], 1)
        .await
        .unwrap_err();
    assert!(matches!(error, IngressError::InvalidKey { .. }), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}
