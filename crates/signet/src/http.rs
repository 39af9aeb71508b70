//! What every HTTP client of Signet shares (feature `http`): the redirect policy of
//! [`OpenAiLm`](crate::lm::OpenAiLm) and of `signet-mcp`'s MCP client.

/// How many redirects one request may follow.
pub const MAX_REDIRECTS: usize = 10;

/// The redirect policy of Signet's HTTP clients: follows `307` and `308` (which resend the same
/// method and body) within the request's origin (scheme, host and port) only, at most
/// [`MAX_REDIRECTS`] times. Another origin would receive the API key, the MCP session id and every
/// custom header (reqwest strips only `Authorization` and cookies on a change of host); a
/// `301`-`303` would turn the POST into a GET without its body. Any other redirect is returned as
/// the response, for the client to report.
///
/// ```
/// let client = reqwest::Client::builder()
///     .redirect(signet::http::same_origin_redirects())
///     .build()
///     .unwrap();
/// # let _ = client;
/// ```
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}
