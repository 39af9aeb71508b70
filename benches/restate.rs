//! Durable runs on Restate (signet-restate): throughput with 1, 2 and 4 workers behind one load
//! balancer, and what journaling adds per step beside a plain in-process run. The ReAct workload
//! of `benches/concurrency` (2 tool steps, `finish`, the extractor: 4 LM calls and 2 tool calls,
//! so 6 journaled steps per run) against its mock OpenAI-compatible server (50 ms per completion).
//!
//! ```text
//! cargo bench --bench restate                      # workers 1,2,4; 200 runs each; 20 sequential runs
//! cargo bench --bench restate -- --workers 1,2 --runs 100 --sequential 10 --latency-ms 50
//! ```
//!
//! Without `--bench` (`cargo test --benches`) it runs 1 worker, 10 runs and 3 sequential runs, as
//! a smoke test. The Restate server is installed from npm into the cache on first use. Workers are this binary run again (`--worker PORT --base-url URL --identity-key KEY`), serving only requests the server signed.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use signet::lm::OpenAiLm;
use signet::module::CallConfig;
use signet_restate::{Agents, RestateServer, RunRequest, free_port, load_balancer};
use tokio::process::{Child, Command};

#[allow(dead_code)]
#[path = "concurrency/server.rs"]
mod server;
// Each bench binary uses part of the shared workloads.
#[allow(dead_code)]
#[path = "workloads/mod.rs"]
mod workloads;

fn lm(base_url: &str) -> Arc<OpenAiLm> {
    let lm = OpenAiLm::builder("signet-mock")
        .base_url(base_url)
        .api_key("none")
        .max_retries(0)
        .timeout(Duration::from_secs(300))
        .build()
        .expect("an LM client");
    Arc::new(lm)
}

fn agents(base_url: &str) -> Agents {
    Agents::new().agent("react", workloads::react(lm(base_url)).core().clone())
}

fn request() -> RunRequest {
    RunRequest {
        agent: "react".into(),
        inputs: json!({ "question": workloads::react_input().question })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        max_iters: None,
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn list(value: Option<String>) -> Vec<usize> {
    value
        .expect("a comma-separated list")
        .split(',')
        .map(|n| n.trim().parse().expect("a number"))
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut worker, mut base_url, mut identity_key) = (None, None, None);
    let timed = std::env::args().any(|a| a == "--bench");
    let (mut workers, mut runs, mut sequential, mut latency) = if timed {
        (vec![1, 2, 4], 200, 20, 50)
    } else {
        (vec![1], 10, 3, 50)
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--worker" => worker = args.next().map(|p| p.parse::<u16>().expect("a port")),
            "--base-url" => base_url = args.next(),
            "--identity-key" => identity_key = args.next(),
            "--workers" => workers = list(args.next()),
            "--runs" => runs = list(args.next())[0],
            "--sequential" => sequential = list(args.next())[0],
            "--latency-ms" => latency = list(args.next())[0] as u64,
            _ => {}
        }
    }
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    if let Some(port) = worker {
        let base_url = base_url.expect("--base-url");
        let worker = signet_restate::Worker::from(agents(&base_url))
            .identity_key(identity_key.expect("--identity-key"));
        runtime
            .block_on(signet_restate::serve(
                SocketAddr::from(([127, 0, 0, 1], port)),
                worker,
            ))
            .expect("serving the worker");
        return;
    }

    let mock: SocketAddr = format!("127.0.0.1:{}", free_port().expect("a port"))
        .parse()
        .expect("an address");
    let latency = Duration::from_millis(latency);
    std::thread::spawn(move || server::serve(mock, 1, latency, None, false));
    let base_url = format!("http://{mock}/v1");
    runtime.block_on(async {
        let server = match RestateServer::start().await {
            Ok(server) => server,
            Err(error) => {
                eprintln!("restate bench: {error}");
                std::process::exit(1);
            }
        };
        let ingress = server.ingress();
        println!(
            "mock LM: {} ms per completion; a run is {} LM calls and 2 tool calls",
            latency.as_millis(),
            workloads::REACT_LM_CALLS
        );

        // Per step: one run at a time, in process and through Restate (1 worker).
        let agent = workloads::react(lm(&base_url));
        let inputs = request().inputs;
        let mut plain = Vec::new();
        for _ in 0..sequential {
            let started = Instant::now();
            let run = agent.core().forward(&inputs, &CallConfig::new()).await.expect("a run");
            assert_eq!(run.outputs["answer"], workloads::REACT_ANSWER);
            plain.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let port = free_port().expect("a port");
        let mut one = spawn(port, &base_url, server.identity_key());
        server
            .register(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("registered");
        let mut durable = Vec::new();
        for i in 0..sequential {
            let started = Instant::now();
            let result = ingress
                .run(&format!("seq-{i}"), &request())
                .await
                .expect("a durable run");
            assert_eq!(result.outputs["answer"], workloads::REACT_ANSWER);
            durable.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let _ = one.kill().await;
        let (plain, durable) = (median(plain), median(durable));
        println!(
            "one run at a time (median of {sequential}): in process {plain:.1} ms, on Restate \
             {durable:.1} ms: +{:.1} ms per run, +{:.1} ms per journaled step (6 per run)",
            durable - plain,
            (durable - plain) / 6.0
        );

        // Throughput: `runs` runs started at once, on N workers.
        for n in workers {
            let ports: Vec<u16> = (0..n).map(|_| free_port().expect("a port")).collect();
            let mut children: Vec<Child> = ports
                .iter()
                .map(|p| spawn(*p, &base_url, server.identity_key()))
                .collect();
            let lb = load_balancer(ports).await.expect("a load balancer");
            server
                .register(&format!("http://127.0.0.1:{lb}"))
                .await
                .expect("registered");
            let started = Instant::now();
            let ids: Vec<String> = (0..runs).map(|i| format!("w{n}-{i}")).collect();
            let request = request();
            futures::future::try_join_all(ids.iter().map(|id| ingress.start(id, &request)))
                .await
                .expect("started");
            let results =
                futures::future::try_join_all(ids.iter().map(|id| ingress.result(id)))
                    .await
                    .expect("every run finishes");
            let wall = started.elapsed().as_secs_f64();
            assert!(
                results
                    .iter()
                    .all(|r| r.outputs["answer"] == workloads::REACT_ANSWER)
            );
            println!(
                "{n} worker(s): {runs} runs in {wall:.2} s = {:.1} runs/s ({:.1} journaled steps/s)",
                runs as f64 / wall,
                6.0 * runs as f64 / wall
            );
            for child in &mut children {
                let _ = child.kill().await;
            }
        }
    });
}

fn spawn(port: u16, base_url: &str, identity_key: &str) -> Child {
    Command::new(std::env::current_exe().expect("this binary"))
        .args(["--worker", &port.to_string(), "--base-url", base_url])
        .args(["--identity-key", identity_key])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("a worker")
}
