//! A mock server's script: replies in turn, streamed when the request asks to stream.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

/// Answers with `replies` in turn: as the server-sent events `as_events` writes for a reply when
/// the request body says `"stream": true` (as every provider's server does), else as JSON; a
/// request past the script gets a 500.
pub struct Script {
    replies: Vec<Value>,
    next: AtomicUsize,
    as_events: fn(&Value) -> String,
}

impl Script {
    pub fn new(replies: Vec<Value>, as_events: fn(&Value) -> String) -> Script {
        Script {
            replies,
            next: AtomicUsize::new(0),
            as_events,
        }
    }
}

impl Respond for Script {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let streamed = serde_json::from_slice::<Value>(&request.body)
            .is_ok_and(|body| body["stream"] == json!(true));
        match self.replies.get(index) {
            Some(reply) if streamed => ResponseTemplate::new(200)
                .set_body_raw((self.as_events)(reply), "text/event-stream"),
            Some(reply) => ResponseTemplate::new(200).set_body_json(reply),
            None => ResponseTemplate::new(500).set_body_string("no reply left"),
        }
    }
}
