//! The one middleware in front of a served HTTP endpoint. In order: who may call (a bearer
//! token, or this machine only), whether there is room ([admission](super::admission)), and on
//! the way out, a shed call's answer turned into `503` with `Retry-After`.
//!
//! One layer rather than one per check: axum clones and boxes the service behind each
//! middleware layer on every request, which a burst of small calls pays for each layer.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use axum::extract::{ConnectInfo, Request};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::admission::{self, Admission};
use crate::BearerAuth;

/// What the endpoint checks around each request.
pub(super) struct Gate {
    pub(super) guard: Guard,
    pub(super) entry: Entry,
}

/// Who may call.
pub(super) enum Guard {
    /// Requests with a valid bearer token.
    Bearer(BearerAuth),
    /// Requests from this machine, for a loopback host name.
    LocalOnly,
    /// Anyone (a proxy in front authenticates).
    Open,
}

/// How a request finds room.
pub(super) enum Entry {
    /// Stateless: every POST waits for a place in the line.
    Line(Admission),
    /// With sessions: a request that would open one is refused while `max` are open.
    Sessions { open: Arc<AtomicUsize>, max: usize },
}

impl Gate {
    /// `router` with the gate in front of it.
    pub(super) fn around(self, router: axum::Router) -> axum::Router {
        let gate = Arc::new(self);
        router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| Arc::clone(&gate).pass(request, next),
        ))
    }

    async fn pass(self: Arc<Self>, request: Request, next: Next) -> Response {
        let refusal = match &self.guard {
            Guard::Bearer(auth) => crate::auth::refusal(auth, &request),
            Guard::LocalOnly => remote_refusal(&request),
            Guard::Open => None,
        };
        if let Some(refusal) = refusal {
            return refusal;
        }
        // Held until the answer is ready.
        let _place = match &self.entry {
            Entry::Line(line) => match admission::admit_request(line, request.method()).await {
                Ok(place) => place,
                Err(refusal) => return refusal,
            },
            Entry::Sessions { open, max } => {
                if let Some(refusal) = admission::refuse_when_full(open, *max, &request) {
                    return refusal;
                }
                None
            }
        };
        admission::shed_calls_as_unavailable(next.run(request).await).await
    }
}

/// For an endpoint without authentication: `403 Forbidden`, with how to allow it, for a request
/// from another machine's address (or an unknown one) or for a host name other than loopback.
fn remote_refusal(request: &Request) -> Option<Response> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip());
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok());
    let reason = remote_reason(peer, host)?;
    tracing::debug!(%reason, "refused an unauthenticated MCP request");
    Some(
        (
            StatusCode::FORBIDDEN,
            format!(
                "refusing an MCP request {reason} without authentication: this endpoint \
                 serves only this machine; set McpServer::with_bearer_auth, or \
                 allow_unauthenticated_remote when a proxy in front authenticates"
            ),
        )
            .into_response(),
    )
}

/// Why a request from `peer` for `host` does not come from this machine, if it does not. A
/// request whose peer is unknown is refused: its `Host` header alone is the sender's to choose.
fn remote_reason(peer: Option<std::net::IpAddr>, host: Option<&str>) -> Option<String> {
    let Some(peer) = peer else {
        return Some(
            "from an unknown address (serve the router with \
             `into_make_service_with_connect_info::<SocketAddr>()` so that it can tell this \
             machine from others)"
                .to_owned(),
        );
    };
    if !peer.to_canonical().is_loopback() {
        return Some(format!("from {peer}"));
    }
    let host = host?;
    (!is_loopback_host(host)).then(|| format!("for host `{host}`"))
}

/// Whether `host` (a host name, `host:port`, or a bracketed IPv6 address) names this machine.
pub(super) fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        // One colon: `host:port`; more: a bare IPv6 address.
        None if host.matches(':').count() == 1 => host.split(':').next().unwrap_or(host),
        None => host,
    };
    let name = name.trim_end_matches('.');
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machine_counts_as_local() {
        for host in [
            "localhost",
            "localhost:8000",
            "LOCALHOST.",
            "127.0.0.1",
            "127.0.0.1:9",
            "127.1.2.3:80",
            "[::1]:8000",
            "::1",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "0.0.0.0:8000",
            "10.0.0.7",
            "example.com:80",
            "localhost.example.com",
            "[2001:db8::1]:80",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
        let loopback = Some("127.0.0.1".parse().unwrap());
        let mapped = Some("::ffff:127.0.0.1".parse().unwrap());
        let remote = Some("10.0.0.7".parse().unwrap());
        assert_eq!(remote_reason(loopback, Some("localhost:1")), None);
        assert_eq!(remote_reason(mapped, Some("localhost:1")), None);
        assert!(
            remote_reason(None, Some("localhost:1"))
                .is_some_and(|reason| reason.contains("unknown address")),
            "an unknown peer is refused, whatever Host it names"
        );
        assert_eq!(remote_reason(loopback, None), None);
        assert_eq!(
            remote_reason(remote, Some("localhost:1")).as_deref(),
            Some("from 10.0.0.7")
        );
        assert_eq!(
            remote_reason(loopback, Some("mcp.example.com")).as_deref(),
            Some("for host `mcp.example.com`")
        );
    }
}
