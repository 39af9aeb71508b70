//! The overhead of one sandboxed run (docs/sandbox.md): a fresh QuickJS engine and thread for a
//! trivial script, for a script that calls a granted function, and for a few thousand loop
//! iterations, so that what the sandbox costs can be told from what the code costs.
//!
//! ```text
//! cargo bench --bench sandbox
//! ```

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use signet_sandbox::Sandbox;

fn runs(c: &mut Criterion) {
    let plain = Sandbox::new();
    c.bench_function("sandbox: 1 + 1", |b| b.iter(|| plain.run("1 + 1").unwrap()));
    let granted = Sandbox::new().grant("add", |args| {
        Ok(json!(
            args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0)
        ))
    });
    c.bench_function("sandbox: one granted call", |b| {
        b.iter(|| granted.run("add({a: 2, b: 3})").unwrap())
    });
    c.bench_function("sandbox: 10,000 loop iterations", |b| {
        b.iter(|| {
            plain
                .run("let s = 0; for (let i = 0; i < 10000; i++) s += i; s")
                .unwrap()
        })
    });
}

criterion_group!(benches, runs);
criterion_main!(benches);
