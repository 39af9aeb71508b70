//! The MCP client follows a redirect only within the server's origin (`signet::http`'s policy, the
//! one `OpenAiLm` uses): a `307` to another origin is an error, and the other origin never sees
//! the request, its session id or its bearer token.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use signet_mcp::McpClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A listener that counts the connections it accepts and answers none.
async fn counting_listener() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    (url, accepted)
}

/// A server that answers every request with a `307` to `location`.
async fn redirector(location: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let location = location.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buffer).await;
                let reply = format!(
                    "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                let _ = socket.write_all(reply.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    url
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed() {
    let (elsewhere, accepted) = counting_listener().await;
    let url = redirector(elsewhere).await;
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        McpClient::builder()
            .bearer_token("secret-token")
            .connect(url),
    )
    .await
    .expect("the handshake ends, it does not hang");
    assert!(
        outcome.is_err(),
        "a handshake through a cross-origin redirect must fail"
    );
    // Give a followed redirect time to arrive, were there one.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "the other origin was contacted"
    );
}
