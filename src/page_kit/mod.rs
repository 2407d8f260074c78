//! The page kit: what every browser page shares, the consent page and the
//! people's pages alike. The askama layout's rendering, the security
//! headers (no caching, no referrer, no framing, a CSP without
//! `unsafe-inline`), the error page, the stylesheet and favicon routes,
//! cookies, the same-origin rule for form posts, and how a redirect URI's
//! host and a name someone else chose are shown. A leaf: it knows no OAuth and no store.

pub mod cookies;
mod page_error;
mod shown_text;

pub use page_error::PageError;
pub use shown_text::visible_text;

use std::sync::Arc;

use askama::Template;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The pages' CSP: nothing but our own stylesheet and images; no script at
/// all; never framed. `form-action` is left out on purpose: browsers apply
/// it to the redirects after a form post, and the consent form's redirect
/// goes to Gitea or to the client's own (often private-use) redirect URI.
pub const PAGE_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

/// Adds the headers every page carries.
pub fn add_page_headers(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_CSP),
    );
}

/// Renders a template into a page response with the shared headers.
pub fn render_page(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(html) => html_page(status, html),
        Err(err) => {
            tracing::error!(error = %err, "a page template failed to render");
            html_page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "<!doctype html><title>Error</title><p>The page could not be shown.</p>".into(),
            )
        }
    }
}

/// Adds the page headers to any response (a redirect from a page flow).
pub fn with_page_headers(mut response: Response) -> Response {
    add_page_headers(response.headers_mut());
    response
}

fn html_page(status: StatusCode, html: String) -> Response {
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        html,
    )
        .into_response();
    add_page_headers(response.headers_mut());
    response
}

/// An error page: what went wrong in words for a person, nothing from the
/// request echoed back. Used wherever redirecting could be abused.
#[derive(Debug, Clone, Template)]
#[template(path = "error.html")]
pub struct ErrorPage {
    pub status: u16,
    pub title: &'static str,
    pub message: String,
    /// A link the person may follow back to the application: (URL, host).
    pub continue_to: Option<(String, String)>,
}

impl ErrorPage {
    pub fn new(status: StatusCode, title: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: status.as_u16(),
            title,
            message: message.into(),
            continue_to: None,
        }
    }

    /// Offers a link to `url` (on `host`) instead of sending the browser there.
    pub fn with_continue_link(mut self, url: String, host: String) -> Self {
        self.continue_to = Some((url, host));
        self
    }
}

impl IntoResponse for ErrorPage {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        render_page(status, &self)
    }
}

/// The stylesheet, compiled in so the binary is the whole deployment.
pub async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        include_str!("../../static/aegis.css"),
    )
        .into_response()
}

/// `/favicon.ico`: none, said without a 404 (browsers ask on every page).
pub async fn no_favicon() -> Response {
    (
        StatusCode::NO_CONTENT,
        [(header::CACHE_CONTROL, "public, max-age=86400")],
    )
        .into_response()
}

/// The pages' own origin (the issuer's), for [`check_origin`].
#[derive(Debug, Clone)]
pub struct PageOrigin(Arc<str>);

impl PageOrigin {
    /// The origin of `issuer` (scheme, host and a port that is not the
    /// scheme's own), as a browser writes it in `Origin`: an issuer with a
    /// path has its pages at that origin still.
    pub fn new(issuer: &str) -> Self {
        let origin = url::Url::parse(issuer)
            .map(|url| url.origin().ascii_serialization())
            .unwrap_or_else(|_| issuer.to_owned());
        Self(Arc::from(origin))
    }
}

/// The one Origin rule of the pages (consent, `/authorize`, the callback,
/// `/account`, `/confirm`, `/admin`), as a middleware in front of all of
/// them: an `Origin` must be absent, `null` (browsers send it from our
/// `no-referrer` pages) or the pages' own origin; anything else is a
/// cross-site request and gets the cross-site page (403). The OAuth API
/// routes do not get it: they answer with CORS instead.
pub async fn check_origin(State(own): State<PageOrigin>, request: Request, next: Next) -> Response {
    if !origin_allowed(request.headers(), &own.0) {
        return PageError::CrossSite.into_response();
    }
    next.run(request).await
}

fn origin_allowed(headers: &HeaderMap, own_origin: &str) -> bool {
    match headers.get(header::ORIGIN).map(HeaderValue::to_str) {
        None => true,
        Some(Ok(origin)) => origin == "null" || origin.eq_ignore_ascii_case(own_origin),
        Some(Err(_)) => false,
    }
}

/// The host a redirect URI sends people to (for a private-use scheme
/// without a host, the scheme).
pub fn host_of(uri: &str) -> String {
    url::Url::parse(uri)
        .ok()
        .map(|u| {
            u.host_str()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("{}:", u.scheme()))
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_carry_no_store_no_referrer_and_anti_framing() {
        let response = ErrorPage::new(StatusCode::BAD_REQUEST, "Bad", "x").into_response();
        let h = response.headers();
        assert_eq!(h[header::CACHE_CONTROL], "no-store");
        assert_eq!(h[header::REFERRER_POLICY], "no-referrer");
        assert_eq!(h[header::X_FRAME_OPTIONS], "DENY");
        let csp = h[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"));
        assert!(!csp.contains("unsafe-inline"));
    }

    #[test]
    fn error_pages_escape_their_message() {
        let html = ErrorPage::new(StatusCode::BAD_REQUEST, "Bad", "<script>x</script>")
            .render()
            .unwrap();
        assert!(!html.contains("<script>x"));
        assert!(html.contains("&#60;script&#62;") || html.contains("&lt;script&gt;"));
    }

    #[test]
    fn requests_from_no_origin_null_or_our_origin_pass_and_others_do_not() {
        let own = "https://mcp.example.com";
        let with = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::ORIGIN, HeaderValue::from_static(v));
            h
        };
        assert!(origin_allowed(&HeaderMap::new(), own));
        assert!(origin_allowed(&with("null"), own));
        assert!(origin_allowed(&with("https://mcp.example.com"), own));
        assert!(!origin_allowed(&with("https://evil.example"), own));
        // Another name of this host is not the pages' origin: their
        // cookies are the issuer's.
        assert!(!origin_allowed(&with("https://other.mcp.example.com"), own));
    }

    #[test]
    fn the_pages_origin_is_the_issuer_s_origin_whatever_its_path() {
        let own = PageOrigin::new("https://mcp.example.com/gateway/");
        assert_eq!(&*own.0, "https://mcp.example.com");
        let own = PageOrigin::new("http://127.0.0.1:8080");
        assert_eq!(&*own.0, "http://127.0.0.1:8080");
        let own = PageOrigin::new("https://mcp.example.com:443");
        assert_eq!(&*own.0, "https://mcp.example.com");
    }
}
