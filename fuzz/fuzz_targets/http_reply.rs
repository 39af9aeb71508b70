//! What an OpenAI-compatible server sends back, byte for byte: the first byte picks a plain JSON
//! reply (`complete`) or a server-sent event stream (`stream`), the rest is the body. Served by a
//! raw TCP server in this process, read by `OpenAiLm` on small worker stacks. A typed error is fine;
//! a panic, an overflow or a hang (libFuzzer's timeout) is not.
#![no_main]

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use signet::lm::{Lm, LmRequest, Message, OpenAiLm};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The body the server sends next, and whether it is an event stream.
static BODY: Mutex<(Vec<u8>, bool)> = Mutex::new((Vec::new(), false));

struct Harness {
    runtime: tokio::runtime::Runtime,
    lm: OpenAiLm,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_stack_size(signet_fuzz::SMALL_STACK)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let address = listener.local_addr().unwrap();
        runtime.spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    // Read the request head and its body (the client sends a small JSON body).
                    let mut seen = Vec::new();
                    let mut buffer = [0u8; 8192];
                    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buffer).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => seen.extend_from_slice(&buffer[..n]),
                        }
                    }
                    let (body, stream) = BODY.lock().unwrap().clone();
                    let kind = if stream {
                        "text/event-stream"
                    } else {
                        "application/json"
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\nconnection: close\r\n\r\n"
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(&body).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        let lm = OpenAiLm::builder("fuzz-model")
            .base_url(format!("http://{address}/v1"))
            .timeout(Duration::from_secs(5))
            .max_retries(0)
            .build()
            .unwrap();
        Harness { runtime, lm }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let stream = first & 1 == 1;
    *BODY.lock().unwrap() = (body.to_vec(), stream);
    let harness = harness();
    let request = LmRequest::new(vec![Message::user("Hi")]);
    harness.runtime.block_on(async {
        if stream {
            let mut events = harness.lm.stream(&request);
            while events.next().await.is_some() {}
        } else {
            let _ = harness.lm.complete(&request).await;
        }
    });
});
