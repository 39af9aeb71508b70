//! `LlamaCpp::serve` records each server it starts in the cache, so that another `serve` from the
//! same cache knows (and warns) that two servers will share the cores; the LM says how many
//! requests the server decodes at once. Run against a stand-in install (no model needed): the
//! cache's "Python" is a script that answers `GET /v1/models` on the port it is given, listing
//! the alias it is given to check (or, once, when `squat-once` is beside it, not: as another
//! process on the port would).

#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::time::Duration;

use signet::lm::Lm;
use signet_local::{LlamaCpp, XLLAMACPP_VERSION};

/// A cache that looks installed, whose server is a small HTTP server in Python.
fn fake_install(name: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!(
        "signet-local-running-servers-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let venv = root.join(format!("xllamacpp-{XLLAMACPP_VERSION}"));
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(venv.join(".signet-ready"), XLLAMACPP_VERSION).unwrap();
    let python = venv.join("bin").join("python");
    std::fs::write(
        &python,
        "#!/usr/bin/env python3\n\
         import http.server, json, os, sys\n\
         port = int(sys.argv[sys.argv.index('--port') + 1])\n\
         check = sys.argv[sys.argv.index('--check-alias') + 1]\n\
         squat = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'squat-once')\n\
         if os.path.exists(squat):\n\
         \x20   os.remove(squat)\n\
         \x20   check = 'someone-else'\n\
         models = json.dumps({'data': [{'id': 'smollm2', 'aliases': ['smollm2', check]}]})\n\
         class Models(http.server.BaseHTTPRequestHandler):\n\
         \x20   def do_GET(self):\n\
         \x20       self.send_response(200)\n\
         \x20       self.end_headers()\n\
         \x20       self.wfile.write(models.encode())\n\
         \x20   def log_message(self, *args):\n\
         \x20       pass\n\
         http.server.HTTPServer(('127.0.0.1', port), Models).serve_forever()\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(root.join("models")).unwrap();
    std::fs::write(
        root.join("models").join("SmolLM2-135M-Instruct.Q4_1.gguf"),
        "",
    )
    .unwrap();
    root
}

#[tokio::test]
async fn servers_from_one_cache_are_known_while_they_run() {
    let root = fake_install("two");
    let model = LlamaCpp::smollm2()
        .cache_dir(&root)
        .ready_timeout(Duration::from_secs(30));
    assert_eq!(model.running_servers().unwrap(), Vec::<u32>::new());

    let first = model.serve().await.unwrap();
    assert_eq!(model.running_servers().unwrap(), [first.pid().unwrap()]);
    // The second server is started with a warning that the first one runs.
    let second = model.serve().await.unwrap();
    let mut both = vec![first.pid().unwrap(), second.pid().unwrap()];
    both.sort_unstable();
    assert_eq!(model.running_servers().unwrap(), both);

    first.stop().await.unwrap();
    assert_eq!(
        model.running_servers().unwrap(),
        [second.pid().unwrap()],
        "a stopped server is no longer counted"
    );
    drop(second);
    assert_eq!(model.running_servers().unwrap(), Vec::<u32>::new());
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn the_lm_says_how_many_requests_the_server_decodes_at_once() {
    let root = fake_install("slots");
    let model = LlamaCpp::smollm2()
        .cache_dir(&root)
        .slots(3)
        .ready_timeout(Duration::from_secs(30));
    let server = model.serve().await.unwrap();
    assert_eq!(
        model.lm(&server).unwrap().capabilities().parallel_requests,
        Some(3)
    );
    assert_eq!(
        model
            .openai_lm(&server)
            .unwrap()
            .capabilities()
            .parallel_requests,
        Some(3)
    );
    let default = LlamaCpp::smollm2().cache_dir(&root);
    assert_eq!(
        default
            .lm(&server)
            .unwrap()
            .capabilities()
            .parallel_requests,
        Some(1)
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn a_port_answered_by_another_process_is_tried_again_on_a_fresh_port() {
    let root = fake_install("squatted");
    let bin = root
        .join(format!("xllamacpp-{XLLAMACPP_VERSION}"))
        .join("bin");
    std::fs::write(bin.join("squat-once"), "").unwrap();
    let model = LlamaCpp::smollm2()
        .cache_dir(&root)
        .ready_timeout(Duration::from_secs(30));
    let server = model.serve().await.unwrap();
    assert!(
        !bin.join("squat-once").exists(),
        "the first start met the squatter"
    );
    // The server that serves is the second one, which lists the alias it was given.
    let body = reqwest::get(format!("{}/models", server.base_url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let models: signet::serde_json::Value = signet::serde_json::from_str(&body).unwrap();
    let check = models["data"][0]["aliases"][1].as_str().unwrap();
    assert!(check.starts_with("~signet-"), "{models}");
    assert_eq!(model.running_servers().unwrap(), [server.pid().unwrap()]);
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}
