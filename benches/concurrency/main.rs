//! Concurrency: N ReAct runs at once on one tokio runtime, each making its 4 LM calls (2 tool steps,
//! `finish`, the extractor) over HTTP to a mock OpenAI-compatible server that takes 50 ms per
//! completion. Reports the wall time against the latency floor (4 × 50 ms), the spread of run times,
//! peak memory per concurrent run, client and server CPU per run, and errors (there must be none).
//!
//! ```text
//! cargo bench --bench concurrency                        # N = 1, 100, 1000, 10000
//! cargo bench --bench concurrency -- --n 1,100 --latency-ms 50
//! cargo bench --bench concurrency -- --dspy PYTHON       # also DSPy's batch() for N = 100, 1000
//! cargo bench --bench concurrency -- --n 10000 --ports 8  # server on 8 ports, one client each
//! cargo bench --bench concurrency -- --serve 127.0.0.1:8000   # only the mock server
//! ```
//!
//! `--http2`: the clients speak HTTP/2 (h2c with prior knowledge), so one connection per client
//! carries every call in flight; `--h2-streams K` caps the streams a server connection carries at
//! once (default: no cap; hosted APIs use 100 to 256), and `--h2-connections K` spreads each
//! client's calls over K connections. `--max-requests K` sets the clients'
//! `max_concurrent_requests(K)`: calls past K wait before their request is written.
//!
//! Other options: `--history CAP` (the clients' call history, default 1000 calls), `--dspy-n LIST`,
//! `--dspy-engine auto|lm15|litellm`, `--json PATH` (every figure), `--base-url URL[,URL..]` (an
//! already running server).
//!
//! `--ports K` exists because of the kernel, not the framework: N HTTP/1.1 requests in flight are N
//! connections, and with thousands of them to one server port, `connect()`'s search for a free
//! local port (`__inet_hash_connect`) dominates the client's CPU (see `docs/performance.md`).
//!
//! Without `--bench` (which `cargo bench` adds; `cargo test --benches` does not) and without `--n`,
//! it only runs N = 1 and 10, as a smoke test.
//!
//! Each N runs in a fresh child process (`--client N --base-url URL`), so its peak RSS (`VmHWM`)
//! belongs to that N alone; the mock server runs in another child (`--serve`), so its sockets and
//! memory are not counted. `benches/compare/concurrency.sh` runs all of it, DSPy included.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use signet::lm::{CallHistory, OpenAiLm};

/// `--features mimalloc`: how much of the client's CPU is glibc's allocator (see
/// `docs/performance.md`); the framework itself sets no allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod server;
use server::cpu_ms;
// Each bench binary uses part of the shared workloads.
#[allow(dead_code)]
#[path = "../workloads/mod.rs"]
mod workloads;

use workloads::{REACT_ANSWER, REACT_LM_CALLS, react, react_input};

#[derive(Clone)]
struct Options {
    ns: Vec<usize>,
    latency: Duration,
    base_url: Option<String>,
    dspy: Option<String>,
    dspy_ns: Vec<usize>,
    dspy_engine: Option<String>,
    history: Option<usize>,
    ports: usize,
    json: Option<String>,
    http2: bool,
    h2_streams: Option<u32>,
    h2_connections: usize,
    /// The clients' `max_concurrent_requests` (none: no limit).
    max_requests: Option<usize>,
}

fn main() {
    let mut options = Options {
        ns: vec![1, 100, 1_000, 10_000],
        latency: Duration::from_millis(50),
        base_url: None,
        dspy: None,
        dspy_ns: vec![100, 1_000],
        dspy_engine: None,
        history: None,
        ports: 1,
        json: None,
        http2: false,
        h2_streams: None,
        h2_connections: 1,
        max_requests: None,
    };
    let mut serve = None;
    let mut until_stdin_closes = false;
    let mut timed = false;
    let mut ns_given = false;
    let mut client = None;
    let mut args = std::env::args().skip(1);
    let list = |value: Option<String>| -> Vec<usize> {
        value
            .expect("a comma-separated list")
            .split(',')
            .map(|n| n.trim().replace('_', "").parse().expect("a number"))
            .collect()
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--serve" => {
                serve = Some(
                    args.next()
                        .unwrap_or_else(|| "127.0.0.1:0".into())
                        .parse::<SocketAddr>()
                        .expect("--serve takes HOST:PORT"),
                )
            }
            "--until-stdin-closes" => until_stdin_closes = true,
            "--client" => client = Some(list(args.next())[0]),
            "--n" => {
                options.ns = list(args.next());
                ns_given = true;
            }
            "--latency-ms" => {
                options.latency = Duration::from_millis(list(args.next())[0] as u64);
            }
            "--base-url" => options.base_url = args.next(),
            "--dspy" => options.dspy = args.next(),
            "--dspy-n" => options.dspy_ns = list(args.next()),
            "--dspy-engine" => options.dspy_engine = args.next(),
            "--history" => options.history = Some(list(args.next())[0]),
            "--ports" => options.ports = list(args.next())[0],
            "--json" => options.json = args.next(),
            "--http2" => options.http2 = true,
            "--h2-connections" => options.h2_connections = list(args.next())[0],
            "--h2-streams" => options.h2_streams = Some(list(args.next())[0] as u32),
            "--max-requests" => options.max_requests = Some(list(args.next())[0]),
            // Added by `cargo bench`; `cargo test --benches` runs the binary without it.
            "--bench" => timed = true,
            other => {
                panic!("unknown argument {other:?} (see the top of benches/concurrency/main.rs)")
            }
        }
    }
    raise_open_files_limit();
    if let Some(addr) = serve {
        return server::serve(
            addr,
            options.ports,
            options.latency,
            options.h2_streams,
            until_stdin_closes,
        );
    }
    if let Some(n) = client {
        let base_url = options.base_url.expect("--client needs --base-url");
        let http2 = options.http2.then_some(options.h2_connections);
        let result = run_client(n, &base_url, options.history, http2, options.max_requests);
        println!("{result}");
        return;
    }
    if !timed && !ns_given {
        // A smoke test under `cargo test --benches`: the whole path, briefly, over HTTP/1.1 and
        // over HTTP/2 on two connections.
        options.ns = vec![1, 10];
        let mut http2 = options.clone();
        (http2.http2, http2.h2_connections) = (true, 2);
        bench(options);
        bench(http2);
        return;
    }
    bench(options);
}

/// Thousands of connections need thousands of file descriptors: the soft limit goes up to the hard
/// one (children inherit it).
fn raise_open_files_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if let Err(error) = setrlimit(Resource::Nofile, limit) {
            eprintln!("could not raise the open-files limit: {error}");
        }
    }
}

fn open_files_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// The driver: starts the server, runs each N in a child process, prints the tables.
fn bench(options: Options) {
    let exe = std::env::current_exe().expect("the bench's own path");
    let mut server = None;
    // One base URL per server port, comma-separated.
    let base_url = match &options.base_url {
        Some(url) => url.clone(),
        None => {
            let (child, urls) = start_server(&exe, &options);
            server = Some(child);
            urls
        }
    };
    let first_url = base_url.split(',').next().unwrap_or_default().to_owned();
    let floor = options.latency * REACT_LM_CALLS as u32;
    println!(
        "mock server {}, {} ms per completion; one run = {REACT_LM_CALLS} LM calls, so the latency floor is {} ms",
        base_url.replace(',', " "),
        options.latency.as_millis(),
        floor.as_millis()
    );
    println!(
        "{} CPUs, open-files limit {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        open_files_limit()
    );

    let mut signet = Vec::new();
    for &n in &options.ns {
        let before = server_stats(&first_url);
        let mut client = Command::new(&exe);
        client.args(["--client", &n.to_string(), "--base-url", &base_url]);
        if let Some(history) = options.history {
            client.args(["--history", &history.to_string()]);
        }
        if let Some(limit) = options.max_requests {
            client.args(["--max-requests", &limit.to_string()]);
        }
        if options.http2 {
            client.args([
                "--http2",
                "--h2-connections",
                &options.h2_connections.to_string(),
            ]);
        }
        let mut result = run_child(&mut client);
        let warm_ups = base_url.split(',').count();
        record_server_calls(&mut result, before, server_stats(&first_url), warm_ups);
        eprintln!("signet N={n}: {result}");
        signet.push(result);
    }

    let mut dspy = Vec::new();
    if let Some(python) = &options.dspy {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/compare/dspy_concurrency.py");
        for &n in &options.dspy_ns {
            // DSPy's batch() runs one module with one LM: it uses the first port only.
            let before = server_stats(&first_url);
            let mut client = Command::new(python);
            client.args([script, "--n", &n.to_string(), "--base-url", &first_url]);
            if let Some(engine) = &options.dspy_engine {
                client.args(["--engine", engine]);
            }
            let mut result = run_child(&mut client);
            record_server_calls(&mut result, before, server_stats(&first_url), 1);
            eprintln!("dspy N={n}: {result}");
            dspy.push(result);
        }
    }

    println!();
    let clients = base_url.split(',').count();
    let connections = match options.h2_connections {
        1 => "one connection".to_owned(),
        k => format!("{k} connections"),
    };
    let http = match (options.http2, options.h2_streams) {
        (false, _) => "HTTP/1.1".to_owned(),
        (true, None) => format!("HTTP/2 (h2c, {connections} a client)"),
        (true, Some(streams)) => {
            format!("HTTP/2 (h2c, {connections} a client, at most {streams} streams a connection)")
        }
    };
    let http = match options.max_requests {
        Some(limit) => format!("{http}, at most {limit} requests at once a client"),
        None => http,
    };
    if clients == 1 {
        println!("Signet (one tokio runtime, OpenAiLm over {http}, no retries):");
    } else {
        println!(
            "Signet (one tokio runtime, {clients} OpenAiLm clients over {http}, one per server port, no retries):"
        );
    }
    print_table(&signet, floor);
    if !dspy.is_empty() {
        let version = dspy[0]["dspy"].as_str().unwrap_or("?");
        println!();
        println!(
            "DSPy {version} (ReAct.batch(num_threads=N), dspy.LM over HTTP, engine {}, no retries):",
            dspy[0]["engine"].as_str().unwrap_or("?")
        );
        print_table(&dspy, floor);
        println!();
        println!("Side by side (same server, same workload):");
        println!(
            "| N | Signet wall | DSPy wall | DSPy / Signet | Signet memory per run | DSPy memory per run |"
        );
        println!("|---:|---:|---:|---:|---:|---:|");
        for theirs in &dspy {
            let n = theirs["n"].as_u64();
            if let Some(ours) = signet.iter().find(|r| r["n"].as_u64() == n) {
                let (a, b) = (ms(ours, "wall_ms"), ms(theirs, "wall_ms"));
                println!(
                    "| {} | {} | {} | {:.1}x | {} | {} |",
                    n.unwrap_or(0),
                    duration(a),
                    duration(b),
                    b / a,
                    per_run_memory(ours),
                    per_run_memory(theirs)
                );
            }
        }
    }
    if let Some(path) = &options.json {
        let all = json!({"floor_ms": floor.as_millis() as u64, "signet": signet, "dspy": dspy});
        std::fs::write(path, serde_json::to_string_pretty(&all).unwrap())
            .unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    }
    let failed = signet.iter().chain(&dspy).any(|r| {
        r["errors"].as_u64() != Some(0)
            || r["server_rejected"].as_u64() != Some(0)
            || r["lm_calls"].as_u64() != r["n"].as_u64().map(|n| n * REACT_LM_CALLS as u64)
    });
    if let Some(mut child) = server {
        let _ = child.kill();
        let _ = child.wait();
    }
    if failed {
        eprintln!(
            "some runs failed, or the server saw other calls than 4 per run (see the tables)"
        );
        std::process::exit(1);
    }
}

fn print_table(rows: &[Value], floor: Duration) {
    let floor_ms = floor.as_secs_f64() * 1e3;
    println!(
        "| N | wall | wall / floor | run time p50 / p99 / max | errors | LM calls served | peak RSS | memory per run | client CPU per run | server CPU per run |"
    );
    println!("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let n = row["n"].as_u64().unwrap_or(0);
        let wall = ms(row, "wall_ms");
        let per_run = |key: &str| {
            let ms = ms(row, key) / n.max(1) as f64;
            if ms >= 1.0 {
                format!("{ms:.1} ms")
            } else {
                format!("{:.0} µs", ms * 1e3)
            }
        };
        println!(
            "| {n} | {} | {:.2} | {} / {} / {} | {} | {} | {:.1} MiB | {} | {} | {} |",
            duration(wall),
            wall / floor_ms,
            duration(ms(row, "p50_ms")),
            duration(ms(row, "p99_ms")),
            duration(ms(row, "max_ms")),
            row["errors"],
            row["lm_calls"],
            row["peak_rss_kb"].as_f64().unwrap_or(0.0) / 1024.0,
            per_run_memory(row),
            per_run("cpu_ms"),
            per_run("server_cpu_ms"),
        );
    }
}

fn ms(row: &Value, key: &str) -> f64 {
    row[key].as_f64().unwrap_or(f64::NAN)
}

fn duration(ms: f64) -> String {
    if ms.is_nan() {
        "n/a".to_owned()
    } else if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

/// (peak RSS - RSS before the runs) / N.
fn per_run_memory(row: &Value) -> String {
    let n = row["n"].as_f64().unwrap_or(1.0).max(1.0);
    let grown = ms(row, "peak_rss_kb") - ms(row, "baseline_rss_kb");
    let kib = grown.max(0.0) / n;
    if kib >= 1024.0 {
        format!("{:.1} MiB", kib / 1024.0)
    } else {
        format!("{kib:.1} KiB")
    }
}

/// Starts `--serve` in a child process and returns it with its base URLs, comma-separated.
fn start_server(exe: &std::path::Path, options: &Options) -> (Child, String) {
    let mut command = Command::new(exe);
    command.args([
        "--serve",
        "127.0.0.1:0",
        "--until-stdin-closes",
        "--ports",
        &options.ports.to_string(),
        "--latency-ms",
        &options.latency.as_millis().to_string(),
    ]);
    if let Some(streams) = options.h2_streams {
        command.args(["--h2-streams", &streams.to_string()]);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("cannot start the mock server");
    let stdout = child.stdout.take().expect("the server's stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the server's first line");
    let urls = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line from the server: {line:?}"))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(",");
    (child, urls)
}

/// What the server answered during a client's measured runs: its count, less the client's warm-up
/// run, is the result's `lm_calls`.
fn record_server_calls(result: &mut Value, before: Stats, after: Stats, warm_ups: usize) {
    let answered = after.answered.saturating_sub(before.answered);
    result["lm_calls"] = json!(answered.saturating_sub((warm_ups * REACT_LM_CALLS) as u64));
    result["server_rejected"] = json!(after.rejected.saturating_sub(before.rejected));
    result["server_cpu_ms"] = json!(after.cpu_ms - before.cpu_ms);
}

/// The server's counters.
struct Stats {
    answered: u64,
    rejected: u64,
    cpu_ms: f64,
}

/// The server's counters so far, from its `/stats`.
fn server_stats(base_url: &str) -> Stats {
    let url = format!("{}/stats", base_url.trim_end_matches("/v1"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = runtime.block_on(async {
        reqwest::get(&url)
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"))
            .text()
            .await
            .unwrap()
    });
    let stats: Value = serde_json::from_str(&body).expect("stats as JSON");
    Stats {
        answered: stats["answered"].as_u64().unwrap_or(0),
        rejected: stats["rejected"].as_u64().unwrap_or(0),
        cpu_ms: stats["cpu_ms"].as_f64().unwrap_or(0.0),
    }
}

/// Runs a child that prints its result as its last line of JSON.
fn run_child(command: &mut Command) -> Value {
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().rev().find(|l| l.starts_with('{'));
    match (output.status.success(), last) {
        (true, Some(line)) => serde_json::from_str(line).expect("a JSON result"),
        _ => panic!("{command:?} failed ({}):\n{stdout}", output.status),
    }
}

/// `--client N`: N concurrent ReAct runs against `base_urls` (comma-separated; with several, one
/// client and agent per URL, runs spread round-robin); prints one JSON line.
/// `http2`: HTTP/2 over this many connections a client; `None`: HTTP/1.1. `max_requests`: the
/// clients' `max_concurrent_requests`.
fn run_client(
    n: usize,
    base_urls: &str,
    history: Option<usize>,
    http2: Option<usize>,
    max_requests: Option<usize>,
) -> Value {
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(async {
        let mut agents = Vec::new();
        for base_url in base_urls.split(',') {
            let mut lm = OpenAiLm::builder("signet-mock")
                .base_url(base_url)
                .api_key("none")
                .max_retries(0)
                .http2(http2.is_some())
                .http2_connections(http2.unwrap_or(1))
                .timeout(Duration::from_secs(300));
            if let Some(capacity) = history {
                lm = lm.history(Arc::new(CallHistory::with_capacity(capacity)));
            }
            if let Some(limit) = max_requests {
                lm = lm.max_concurrent_requests(limit);
            }
            let lm = lm.build().expect("an OpenAI client");
            let agent = Arc::new(react(Arc::new(lm)));
            // Warm up (lazy statics, the first connection), then measure from here.
            let warm = agent.call(react_input()).await.expect("the warm-up run");
            assert_eq!(warm.output.answer, REACT_ANSWER);
            agents.push(agent);
        }
        let baseline_rss_kb = proc_status_kb("VmRSS");
        let cpu_before = cpu_ms();

        let started = Instant::now();
        let runs: Vec<_> = (0..n)
            .map(|i| {
                let agent = agents[i % agents.len()].clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = agent.call(react_input()).await;
                    (started.elapsed(), result)
                })
            })
            .collect();
        let mut times = Vec::with_capacity(n);
        let mut errors = 0;
        let mut first_error = None;
        let mut lm_calls = 0;
        let mut retries = 0;
        for run in runs {
            let (elapsed, result) = run.await.expect("a run panicked");
            times.push(elapsed);
            match result {
                Ok(output) if output.output.answer == REACT_ANSWER => {
                    lm_calls += output.usage.lm_calls;
                    retries += output.usage.retries;
                }
                Ok(output) => {
                    errors += 1;
                    first_error.get_or_insert(format!("wrong answer {:?}", output.output.answer));
                }
                Err(error) => {
                    errors += 1;
                    first_error.get_or_insert(error.to_string());
                }
            }
        }
        let wall = started.elapsed();
        let cpu = cpu_ms() - cpu_before;
        times.sort();
        let pick = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        let millis = |d: Duration| d.as_secs_f64() * 1e3;
        json!({
            "impl": "signet",
            "n": n,
            "wall_ms": millis(wall),
            "p50_ms": millis(pick(0.5)),
            "p99_ms": millis(pick(0.99)),
            "max_ms": millis(pick(1.0)),
            "errors": errors,
            "first_error": first_error,
            "client_lm_calls": lm_calls,
            "retries": retries,
            "baseline_rss_kb": baseline_rss_kb,
            "peak_rss_kb": proc_status_kb("VmHWM"),
            "cpu_ms": cpu,
        })
    })
}

/// A `kB` line of `/proc/self/status` (`VmRSS`, `VmHWM`).
fn proc_status_kb(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix(key)?.strip_prefix(':')?;
            rest.trim().trim_end_matches("kB").trim().parse().ok()
        })
        .unwrap_or(0)
}
