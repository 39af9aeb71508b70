//! The server's progress notifications, routed to the calls that follow them.
//!
//! The progress routes of calls waiting for their reply, and the latest messages that came for
//! no open route. rmcp picks a call's progress token as it sends the request, so the route opens
//! only after the request is on its way, and the server's first messages can be handled before
//! it: they wait here and the route takes them when it opens. Messages of calls that follow no
//! progress wait too, the oldest dropped past [`EARLY_PROGRESS`].

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use super::lock;

use rmcp::model::ProgressToken;
use signet::tool::ProgressSink;

/// The progress routes of one session's calls (see the module docs).
#[derive(Default)]
pub(super) struct ProgressRoutes {
    routes: Mutex<Routes>,
}

#[derive(Default)]
struct Routes {
    sinks: HashMap<ProgressToken, ProgressSink>,
    early: VecDeque<(ProgressToken, String)>,
}

/// How many messages with no open route are kept for a route about to open.
const EARLY_PROGRESS: usize = 64;

impl ProgressRoutes {
    /// Sends the server's progress message for `token` to the caller's sink, if the call is
    /// still waiting, or keeps it for a route about to open.
    pub(super) fn notify(
        &self,
        token: &ProgressToken,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        let message = message.unwrap_or_else(|| match total {
            Some(total) => format!("{progress} of {total}"),
            None => format!("{progress}"),
        });
        // The lock is held while the sink runs, so a route that opens meanwhile delivers the
        // messages that came before it first, in order.
        lock(&self.routes).deliver(token, message);
    }

    /// Opens the route of `token` to `sink` until the returned guard drops; the messages for
    /// `token` that came before go to `sink` first.
    pub(super) fn open(&self, token: ProgressToken, sink: ProgressSink) -> ProgressRoute<'_> {
        lock(&self.routes).open(token.clone(), sink);
        ProgressRoute {
            routes: &self.routes,
            token,
        }
    }

    /// Drops the messages kept for routes not yet open: a new connection numbers its progress
    /// tokens afresh.
    pub(super) fn forget_early(&self) {
        lock(&self.routes).early.clear();
    }
}

impl Routes {
    /// Sends `message` to the route of `token`, or keeps it for a route about to open.
    fn deliver(&mut self, token: &ProgressToken, message: String) {
        match self.sinks.get(token) {
            Some(sink) => sink(message),
            None => {
                if self.early.len() == EARLY_PROGRESS {
                    self.early.pop_front();
                }
                self.early.push_back((token.clone(), message));
            }
        }
    }

    /// Opens the route of `token`; the messages that came for it before go to `sink` first.
    fn open(&mut self, token: ProgressToken, sink: ProgressSink) {
        for (for_token, message) in std::mem::take(&mut self.early) {
            if for_token == token {
                sink(message);
            } else {
                self.early.push_back((for_token, message));
            }
        }
        self.sinks.insert(token, sink);
    }
}

/// The route of one call's progress notifications to its caller, removed when the call ends.
pub(super) struct ProgressRoute<'a> {
    routes: &'a Mutex<Routes>,
    token: ProgressToken,
}

impl Drop for ProgressRoute<'_> {
    fn drop(&mut self) {
        lock(self.routes).sinks.remove(&self.token);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use rmcp::model::NumberOrString;

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    fn collecting() -> (ProgressSink, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = seen.clone();
        let sink: ProgressSink = Arc::new(move |m: String| lock(&into).push(m));
        (sink, seen)
    }

    #[test]
    fn messages_before_the_route_opens_reach_it_first_and_in_order() {
        let mut routes = Routes::default();
        routes.deliver(&token(1), "turn 1".into());
        routes.deliver(&token(2), "another call".into());
        routes.deliver(&token(1), "thought".into());
        let (sink, seen) = collecting();
        routes.open(token(1), sink);
        routes.deliver(&token(1), "calling tick".into());
        assert_eq!(*lock(&seen), ["turn 1", "thought", "calling tick"]);
        // The other call's message still waits for its own route.
        assert_eq!(routes.early.len(), 1);
        let (sink, seen) = collecting();
        routes.open(token(2), sink);
        assert_eq!(*lock(&seen), ["another call"]);
    }

    #[test]
    fn unrouted_messages_are_bounded() {
        let mut routes = Routes::default();
        for n in 0..EARLY_PROGRESS + 10 {
            routes.deliver(&token(7), n.to_string());
        }
        let (sink, seen) = collecting();
        routes.open(token(7), sink);
        let seen = lock(&seen);
        assert_eq!(seen.len(), EARLY_PROGRESS);
        assert_eq!(seen[0], "10");
    }
}
