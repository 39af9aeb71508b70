//! The HTTP client behind a streamable-HTTP connection: keep-alive while the server answers with
//! plain JSON, a fresh connection per request once it answers with event streams.
//!
//! Why both: a kept-alive connection saves a TCP handshake per call (and a `TIME_WAIT` socket
//! left behind for each), which doubles the calls per second a client gets from a stateless
//! server. But a server that answers with an event stream writes it in several pieces, and with
//! Nagle's algorithm on (axum's default, so most rmcp servers) the second piece waits for the
//! client's delayed ACK, 40 ms on Linux, on every reused connection; a fresh connection ACKs at
//! once. rmcp's own client avoids the stall by never reusing connections. This client reuses
//! them until the first event-stream answer, then stops.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// The HTTP client of one MCP endpoint (see the module docs).
#[derive(Clone)]
pub(super) struct HttpClient {
    /// Keeps connections alive.
    pooled: reqwest::Client,
    /// Opens a connection per request.
    fresh: reqwest::Client,
    /// The server has answered a POST with an event stream.
    streams: Arc<AtomicBool>,
}

impl HttpClient {
    pub(super) fn new() -> reqwest::Result<HttpClient> {
        let builder = || {
            reqwest::Client::builder()
                .tcp_nodelay(true)
                .redirect(signet::http::same_origin_redirects())
        };
        Ok(HttpClient {
            pooled: builder().build()?,
            fresh: builder().pool_max_idle_per_host(0).build()?,
            streams: Arc::default(),
        })
    }

    /// The client for the next POST.
    fn for_post(&self) -> &reqwest::Client {
        if self.streams.load(Ordering::Relaxed) {
            &self.fresh
        } else {
            &self.pooled
        }
    }
}

type Headers = HashMap<HeaderName, HeaderValue>;
type HttpError = StreamableHttpError<reqwest::Error>;
type EventStream = BoxStream<'static, Result<Sse, SseError>>;

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let response = self
            .for_post()
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        if matches!(response, Ok(StreamableHttpPostResponse::Sse(..))) {
            self.streams.store(true, Ordering::Relaxed);
        }
        response
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), HttpError> {
        self.fresh
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<EventStream, HttpError> {
        self.fresh
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<EventStream, HttpError> {
        self.fresh
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
