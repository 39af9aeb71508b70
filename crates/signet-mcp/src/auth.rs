//! Bearer-token authentication for a Signet MCP server over HTTP.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// Who may call a Signet MCP server over HTTP: every request must carry
/// `Authorization: Bearer <token>` with a token this accepts; any other request is answered
/// `401 Unauthorized` (with `WWW-Authenticate: Bearer`) before it reaches the MCP session.
///
/// ```
/// use signet_mcp::BearerAuth;
///
/// let auth = BearerAuth::tokens(["s3cret"]);
/// assert!(auth.allows(Some("Bearer s3cret")));
/// assert!(!auth.allows(Some("Bearer guess")));
/// assert!(!auth.allows(None));
///
/// // Or any rule of yours (a database lookup, a JWT check, ...):
/// let auth = BearerAuth::validator(|token| token.starts_with("team-"));
/// assert!(auth.allows(Some("bearer team-7")));
/// ```
#[derive(Clone)]
pub struct BearerAuth {
    check: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerAuth").finish_non_exhaustive()
    }
}

impl BearerAuth {
    /// Accepts exactly these tokens (compared in constant time). Empty tokens are ignored, so
    /// an empty list accepts no one.
    pub fn tokens<I, S>(tokens: I) -> BearerAuth
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let tokens: Vec<String> = tokens
            .into_iter()
            .map(Into::into)
            .filter(|token| !token.is_empty())
            .collect();
        BearerAuth::validator(move |given| {
            // Every token is compared, so the time taken does not say which one nearly matched.
            tokens.iter().fold(false, |found, token| {
                found | bool::from(token.as_bytes().ct_eq(given.as_bytes()))
            })
        })
    }

    /// Accepts the tokens `check` accepts (it gets the token without the `Bearer ` scheme).
    pub fn validator(check: impl Fn(&str) -> bool + Send + Sync + 'static) -> BearerAuth {
        BearerAuth {
            check: Arc::new(check),
        }
    }

    /// Whether a request with this `Authorization` header value may go on. The scheme is
    /// matched case-insensitively, as RFC 6750 says; a missing header or an empty token is
    /// refused.
    pub fn allows(&self, authorization: Option<&str>) -> bool {
        let Some((scheme, token)) = authorization.and_then(|value| value.split_once(' ')) else {
            return false;
        };
        let token = token.trim();
        scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && (self.check)(token)
    }
}

/// The answer to a request without a valid bearer token (`401` with `WWW-Authenticate`), or
/// `None` when it may go on. Checked in front of the MCP endpoint: refused requests never reach
/// a session.
pub(crate) fn refusal(auth: &BearerAuth, request: &Request) -> Option<Response> {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    if auth.allows(authorization) {
        return None;
    }
    tracing::debug!(
        given = authorization.is_some(),
        "refused an MCP request without a valid bearer token"
    );
    Some(
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
            "missing or invalid bearer token (send `Authorization: Bearer <token>`)",
        )
            .into_response(),
    )
}
