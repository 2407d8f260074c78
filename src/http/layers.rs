//! The generic layers around every route: request timeouts, the panic
//! catcher, the access log, the trace span, and `Connection: close` on
//! early refusals.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::{Instrument, Level};

use super::step::Step;
use crate::telemetry::spans;

/// The refusals our guards, limiter and authentication send before a
/// request's body is read.
const EARLY_REFUSALS: [StatusCode; 6] = [
    StatusCode::UNAUTHORIZED,
    StatusCode::FORBIDDEN,
    StatusCode::PAYLOAD_TOO_LARGE,
    StatusCode::UNSUPPORTED_MEDIA_TYPE,
    StatusCode::MISDIRECTED_REQUEST,
    StatusCode::TOO_MANY_REQUESTS,
];

/// The step: an HTTP/1 request that declared a body and got an early
/// refusal is answered with `Connection: close`. Its body may be unread,
/// and hyper then closes the connection; without the header a keep-alive
/// client would send its next request into a closing socket (seen with
/// httpx: "Server disconnected without sending a response" right after the
/// 401 that starts every OAuth sign-in). Reading unauthenticated bodies
/// instead would spend work on requests we refuse.
#[derive(Debug, Clone, Copy)]
pub struct CloseAfterEarlyRefusal;

impl Step for CloseAfterEarlyRefusal {
    /// Whether the request is HTTP/1 and declared a body.
    type Carry = bool;

    fn before(&self, request: &Request<Body>) -> Result<bool, Response> {
        let http1 = request.version() <= axum::http::Version::HTTP_11;
        let headers = request.headers();
        let declares_body = headers.contains_key(header::TRANSFER_ENCODING)
            || headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim() != "0");
        Ok(http1 && declares_body)
    }

    fn after(&self, http1_with_body: bool, mut response: Response) -> Response {
        if http1_with_body && EARLY_REFUSALS.contains(&response.status()) {
            response.headers_mut().insert(
                header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        response
    }
}

/// Middleware: the request's trace span (`crate::telemetry::spans`),
/// named by its route template, the caller's span its parent. Everything
/// after it, `/mcp`'s stages and the tool call, is its child. Nothing when
/// traces are off.
pub async fn trace_request(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|path| path.as_str());
    let span = spans::http_request(request.method(), route, request.headers());
    if span.is_disabled() {
        return next.run(request).await;
    }
    request
        .extensions_mut()
        .insert(spans::RequestSpan(span.clone()));
    let response = next.run(request).instrument(span.clone()).await;
    spans::http_status(&span, response.status().as_u16());
    response
}

/// A request still running after `after` is answered `504`.
pub fn timeout(after: Duration) -> TimeoutLayer {
    TimeoutLayer::with_status_code(StatusCode::GATEWAY_TIMEOUT, after)
}

/// The answer to a panicking handler: it says nothing about the panic.
pub fn panic_response(_panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    // The payload may quote request data; it is not logged either.
    tracing::error!("a request handler panicked");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        "internal server error",
    )
        .into_response()
}

type PanicHandler = fn(Box<dyn std::any::Any + Send + 'static>) -> Response;

/// Turns a panic into a bare `500`.
pub fn catch_panic() -> CatchPanicLayer<PanicHandler> {
    CatchPanicLayer::custom(panic_response as PanicHandler)
}

/// The path as logged: the query string, which may carry codes, states or
/// tokens, is replaced with `[redacted]`.
pub fn logged_path(uri: &Uri) -> String {
    match uri.query() {
        Some(_) => format!("{}?[redacted]", uri.path()),
        None => uri.path().to_owned(),
    }
}

fn request_span(request: &Request<Body>) -> tracing::Span {
    tracing::info_span!(
        "http",
        method = %request.method(),
        path = %logged_path(request.uri()),
    )
}

type MakeSpan = fn(&Request<Body>) -> tracing::Span;

/// The access log: one span per request with method and redacted path,
/// and an `info` event with status and latency when it is answered.
/// Headers are never logged.
pub fn access_log() -> TraceLayer<SharedClassifier<ServerErrorsAsFailures>, MakeSpan> {
    TraceLayer::new_for_http()
        .make_span_with(request_span as MakeSpan)
        .on_response(DefaultOnResponse::new().level(Level::INFO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use tower::ServiceExt;

    #[test]
    fn logged_paths_never_carry_the_query() {
        let uri: Uri = "/oauth/callback?code=secret&state=s".parse().unwrap();
        assert_eq!(logged_path(&uri), "/oauth/callback?[redacted]");
        assert!(!logged_path(&uri).contains("secret"));
        assert_eq!(logged_path(&"/mcp".parse().unwrap()), "/mcp");
    }

    #[tokio::test]
    async fn a_panicking_handler_gets_a_bare_500() {
        async fn boom() -> &'static str {
            panic!("secret detail 0123456789abcdef")
        }
        let app = Router::new().route("/", get(boom)).layer(catch_panic());
        let response = app
            .oneshot(Request::builder().uri("/").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        let body = String::from_utf8_lossy(&body);
        assert_eq!(body, "internal server error");
        assert!(!body.contains("secret"));
    }

    #[tokio::test]
    async fn a_slow_handler_times_out() {
        async fn slow() -> &'static str {
            tokio::time::sleep(Duration::from_secs(5)).await;
            "late"
        }
        let app = Router::new()
            .route("/", get(slow))
            .layer(timeout(Duration::from_millis(50)));
        let response = app
            .oneshot(Request::builder().uri("/").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    }
}
