//! The one HTTP client that talks to Gitea: pooled, with timeouts, never
//! following redirects, without a cookie store (so nothing carries over
//! between identities). It sends a [`GiteaCall`] as an [`Identity`] and
//! reads the answer with hard size caps.

use std::time::Duration;

use bytes::Bytes;
use secrecy::{ExposeSecret, SecretString};

use super::call::{CallBody, GiteaCall, MultipartPart};
use crate::config::Limits;
use crate::identity::Identity;
use crate::telemetry::{context, spans};
use tracing::Instrument;

/// Upstream text and JSON bodies are read up to this size, then reading stops.
pub const MAX_TEXT_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Upstream error bodies are read up to this size.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Content type of an upload that names none (or an unparsable one).
const DEFAULT_UPLOAD_TYPE: &str = "application/octet-stream";

/// What Gitea answered, with the body already read (up to a cap).
#[derive(Debug, Clone)]
pub struct UpstreamResponse {
    pub status: u16,
    pub content_type: Option<String>,
    pub total_count: Option<u64>,
    pub link: Option<String>,
    pub body: Bytes,
    /// True when the body was longer than the cap and reading stopped.
    pub body_truncated: bool,
}

/// Failures before Gitea answered.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("Gitea did not answer in time")]
    Timeout,
    #[error("Gitea could not be reached")]
    Unreachable,
    #[error("the request to Gitea failed")]
    Request,
    /// Gitea answered, with a status that is not a success (the
    /// gateway's own requests: the admin account, the probes).
    #[error("Gitea answered HTTP {status}")]
    Answered { status: u16 },
}

impl UpstreamError {
    /// The variant's name, for `EXPOSE_ERROR_DETAILS` (never a value).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Timeout => "UpstreamError::Timeout",
            Self::Unreachable => "UpstreamError::Unreachable",
            Self::Request => "UpstreamError::Request",
            Self::Answered { .. } => "UpstreamError::Answered",
        }
    }

    fn from_reqwest(err: &reqwest::Error) -> Self {
        if err.is_timeout() {
            Self::Timeout
        } else if err.is_connect() {
            Self::Unreachable
        } else {
            Self::Request
        }
    }
}

/// Why the client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the Gitea API base is not an http(s) URL with a host and no query or fragment")]
    Base,
    #[error("the HTTP client could not be built: {0}")]
    Http(#[from] reqwest::Error),
}

/// The executor's HTTP client for one Gitea instance.
#[derive(Debug, Clone)]
pub struct GiteaClient {
    http: reqwest::Client,
    api_base: String,
    /// `api_base` parsed once: each call's URL is it with the call's path,
    /// so the host is not parsed again per call (what that saved is in
    /// `docs/benchmarks.md`).
    api_base_url: url::Url,
    max_binary_bytes: usize,
}

impl GiteaClient {
    /// `api_base` is `GITEA_URL/api/v1`.
    pub fn new(api_base: String, limits: &Limits) -> Result<Self, ClientError> {
        let api_base_url = url::Url::parse(&api_base).map_err(|_| ClientError::Base)?;
        if !matches!(api_base_url.scheme(), "http" | "https")
            || !api_base_url.has_host()
            || api_base_url.query().is_some()
            || api_base_url.fragment().is_some()
        {
            return Err(ClientError::Base);
        }
        crate::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(limits.gitea_timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .user_agent(concat!("aegis-gitea-mcp/", env!("CARGO_PKG_VERSION")))
            .no_proxy()
            .build()?;
        Ok(Self {
            http,
            api_base,
            api_base_url,
            max_binary_bytes: limits.max_binary_bytes,
        })
    }

    /// The URL `call` is sent to, without its query: the API base with the
    /// call's path after the base's own, encoded as a path (what a path
    /// still holds unencoded, such as a raw tool path's non-ASCII, is
    /// encoded as parsing would). The same URL as parsing the two joined
    /// for every path the call builders make (they refuse or encode `?`
    /// and `#`; the tests hold it); a `?` or `#` would stay in the path,
    /// encoded, where parsing the joined string would start a query.
    fn call_url(&self, call: &GiteaCall) -> url::Url {
        let mut url = self.api_base_url.clone();
        let path = format!("{}{}", self.api_base_url.path(), call.path);
        url.set_path(&path);
        url
    }

    /// The REST API root this client talks to.
    pub fn api_base(&self) -> &str {
        &self.api_base
    }

    /// Sends `call` with the identity's token (and `Sudo`, when asked).
    pub async fn send(
        &self,
        identity: &Identity,
        call: &GiteaCall,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let mut request = self
            .http
            .request(call.method.clone(), self.call_url(call))
            .header(
                http::header::AUTHORIZATION,
                authorization_value(&identity.token),
            )
            .header(http::header::ACCEPT, "application/json, */*;q=0.5");
        if !call.query.is_empty() {
            request = request.query(&call.query);
        }
        if let Some(login) = &call.sudo {
            request = request.header("Sudo", login.as_str());
        }
        request = match &call.body {
            CallBody::None => request,
            CallBody::Json(value) => request.json(value),
            CallBody::Text(text) => request
                .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")
                .body(text.clone()),
            CallBody::Multipart(parts) => request.multipart(multipart_form(parts)),
        };
        let span = spans::gitea_request(&call.method, &call.route, &self.api_base);
        if !span.is_disabled() {
            let mut headers = http::HeaderMap::new();
            context::inject(&span, &mut headers);
            request = request.headers(headers);
        }
        let answer = async {
            let response = request
                .send()
                .await
                .map_err(|e| UpstreamError::from_reqwest(&e))?;
            self.read_response(response).await
        }
        .instrument(span.clone())
        .await;
        match &answer {
            Ok(response) => spans::http_status(&span, response.status),
            Err(err) => spans::failed(&span, err.type_name()),
        }
        answer
    }

    /// Sends `call` as [`GiteaClient::send`] does; when Gitea answers 401
    /// and the identity's session can be renewed (an OAuth grant), sends it
    /// once more with the renewed session and returns that identity too.
    /// Resending is safe for writes: Gitea checks the token before it acts.
    pub async fn send_renewing(
        &self,
        identity: &Identity,
        call: &GiteaCall,
    ) -> Result<(UpstreamResponse, Option<Identity>), UpstreamError> {
        let response = self.send(identity, call).await?;
        if response.status != 401 {
            return Ok((response, None));
        }
        let Some(renewal) = &identity.renewal else {
            return Ok((response, None));
        };
        match renewal.renew().await {
            Some(renewed) => {
                let retried = self.send(&renewed, call).await?;
                Ok((retried, Some(renewed)))
            }
            None => Ok((response, None)),
        }
    }

    /// A GET with a token and no envelope (the admin login lookup, the live
    /// OpenAPI document). Returns the body when the status is 2xx.
    pub async fn get_json(
        &self,
        url: &str,
        token: Option<&SecretString>,
    ) -> Result<serde_json::Value, UpstreamError> {
        self.get_json_page(url, token).await.map(|page| page.body)
    }

    /// As [`GiteaClient::get_json`], with Gitea's paging headers: for a
    /// caller that reads a whole list itself (the policy's facts).
    pub async fn get_json_page(
        &self,
        url: &str,
        token: Option<&SecretString>,
    ) -> Result<JsonPage, UpstreamError> {
        let mut request = self.http.get(url);
        if let Some(token) = token {
            request = request.header(http::header::AUTHORIZATION, authorization_value(token));
        }
        let response = request
            .send()
            .await
            .map_err(|e| UpstreamError::from_reqwest(&e))?;
        if !response.status().is_success() {
            return Err(UpstreamError::Answered {
                status: response.status().as_u16(),
            });
        }
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let total_count = header("x-total-count").and_then(|v| v.trim().parse().ok());
        let link = header("link");
        let (body, truncated) = read_capped(response, MAX_TEXT_BODY_BYTES).await?;
        if truncated {
            return Err(UpstreamError::Request);
        }
        let body = serde_json::from_slice(&body).map_err(|_| UpstreamError::Request)?;
        Ok(JsonPage {
            body,
            total_count,
            link,
        })
    }

    async fn read_response(
        &self,
        response: reqwest::Response,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let status = response.status().as_u16();
        let headers = response.headers();
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header("content-type");
        let total_count = header("x-total-count").and_then(|v| v.trim().parse().ok());
        let link = header("link");
        let cap = if !(200..300).contains(&status) {
            MAX_ERROR_BODY_BYTES
        } else if is_textual(content_type.as_deref()) {
            MAX_TEXT_BODY_BYTES
        } else {
            // One byte over the limit tells the envelope the binary was too big.
            self.max_binary_bytes.saturating_add(1)
        };
        let (body, body_truncated) = read_capped(response, cap).await?;
        Ok(UpstreamResponse {
            status,
            content_type,
            total_count,
            link,
            body,
            body_truncated,
        })
    }
}

/// A JSON answer and the paging headers Gitea sent with it.
#[derive(Debug, Clone)]
pub struct JsonPage {
    pub body: serde_json::Value,
    /// `X-Total-Count`: the items of the whole list.
    pub total_count: Option<u64>,
    /// `Link`, with its `rel="next"` while there is more.
    pub link: Option<String>,
}

impl JsonPage {
    /// Whether `Link` names a next page.
    pub fn links_next(&self) -> bool {
        self.link
            .as_deref()
            .is_some_and(|link| link.split(',').any(|entry| entry.contains(r#"rel="next""#)))
    }
}

fn authorization_value(token: &SecretString) -> http::HeaderValue {
    // The header keeps this buffer (`from_maybe_shared` checks it and does
    // not copy it; a buffer filled to its capacity needs no second block).
    let secret = token.expose_secret();
    let mut text = String::with_capacity("token ".len() + secret.len());
    text.push_str("token ");
    text.push_str(secret);
    let mut value = http::HeaderValue::from_maybe_shared(Bytes::from(text))
        .unwrap_or_else(|_| http::HeaderValue::from_static("token invalid"));
    value.set_sensitive(true);
    value
}

/// JSON and text are decoded; everything else is binary. Compared without
/// case and without a lowercased copy (it runs twice a call).
pub fn is_textual(content_type: Option<&str>) -> bool {
    let Some(ct) = content_type else {
        return true;
    };
    let essence = ct.split(';').next().unwrap_or("").trim().as_bytes();
    let starts = |prefix: &str| {
        essence
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
    };
    let ends = |suffix: &str| {
        essence
            .len()
            .checked_sub(suffix.len())
            .is_some_and(|at| essence[at..].eq_ignore_ascii_case(suffix.as_bytes()))
    };
    let is = |name: &str| essence.eq_ignore_ascii_case(name.as_bytes());
    starts("text/")
        || is("application/json")
        || ends("+json")
        || is("application/xml")
        || is("application/x-yaml")
}

async fn read_capped(
    response: reqwest::Response,
    cap: usize,
) -> Result<(Bytes, bool), UpstreamError> {
    let body = crate::bounded_body::read_capped(response, cap)
        .await
        .map_err(|e| UpstreamError::from_reqwest(&e))?;
    Ok((body.bytes, body.truncated))
}

fn multipart_form(parts: &[MultipartPart]) -> reqwest::multipart::Form {
    let mut form = reqwest::multipart::Form::new();
    for part in parts {
        form = match part {
            MultipartPart::Text { field, value } => form.text(field.clone(), value.clone()),
            MultipartPart::File {
                field,
                filename,
                content_type,
                content,
            } => {
                let base =
                    || reqwest::multipart::Part::bytes(content.clone()).file_name(filename.clone());
                // An unparsable (but single-line, validated) content type
                // falls back to the default rather than failing the upload.
                let content_type = content_type.as_deref().unwrap_or(DEFAULT_UPLOAD_TYPE);
                let file = base()
                    .mime_str(content_type)
                    .or_else(|_| base().mime_str(DEFAULT_UPLOAD_TYPE))
                    .unwrap_or_else(|_| base());
                form.part(field.clone(), file)
            }
        };
    }
    form
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(api_base: &str) -> GiteaClient {
        GiteaClient::new(api_base.to_owned(), &Limits::default()).expect("a client")
    }

    fn call(path: &str) -> GiteaCall {
        GiteaCall {
            method: http::Method::GET,
            path: path.into(),
            route: path.into(),
            query: vec![],
            body: CallBody::None,
            sudo: None,
        }
    }

    #[test]
    fn a_calls_url_is_the_base_and_path_parsed_together() {
        let bases = [
            "http://127.0.0.1:3000/api/v1",
            "https://gitea.example.com/api/v1",
            "https://example.com/git/sub/api/v1",
            "http://[::1]:8080/api/v1",
        ];
        let paths = [
            "/user",
            "/repos/o/r/issues",
            "/repos/o%2Fx/r/contents/a%20b/%C3%A9.md",
            "/repos/o/r/raw/dir/file.txt",
            "/repos/o/r/git/refs/heads/feature%2Fx",
            "/users/%E2%80%AEevil",
            "/repos/o/r/contents/",
            "/a/./b/../c",
            // As the raw tool passes them: not encoded.
            "/users/é",
            "/repos/o/r/contents/a{b}\"c<d>`^|",
        ];
        for base in bases {
            for path in paths {
                let joined = url::Url::parse(&format!("{base}{path}")).expect("a URL");
                assert_eq!(client(base).call_url(&call(path)), joined, "{base} {path}");
            }
        }
    }

    #[test]
    fn an_api_base_without_a_host_or_with_a_query_is_refused() {
        for base in [
            "not a url",
            "mailto:a@b.c",
            "ftp://h/api/v1",
            "http://h/api/v1?x=1",
            "http://h/api/v1#x",
        ] {
            let made = GiteaClient::new(base.to_owned(), &Limits::default());
            assert!(matches!(made, Err(ClientError::Base)), "{base}");
        }
    }

    #[test]
    fn json_and_text_are_textual_and_octet_stream_is_not() {
        assert!(is_textual(Some("application/json; charset=utf-8")));
        assert!(is_textual(Some("text/plain")));
        assert!(is_textual(Some("application/problem+json")));
        assert!(is_textual(None));
        assert!(!is_textual(Some("application/octet-stream")));
        assert!(!is_textual(Some("image/png")));
    }

    #[test]
    fn the_authorization_header_carries_the_token_and_is_marked_sensitive() {
        let value = authorization_value(&SecretString::from("abc123".to_owned()));
        assert_eq!(value, "token abc123");
        assert!(value.is_sensitive());
    }

    #[test]
    fn a_token_that_cannot_be_a_header_is_never_sent() {
        let value = authorization_value(&SecretString::from("abc\r\nX-Injected: 1".to_owned()));
        assert_eq!(value, "token invalid");
        assert!(value.is_sensitive());
    }

    #[test]
    fn content_types_are_compared_without_case_and_whole() {
        assert!(is_textual(Some("Application/JSON")));
        assert!(is_textual(Some(" TEXT/Markdown ; charset=utf-8")));
        assert!(is_textual(Some("application/VND.api+JSON")));
        assert!(is_textual(Some("APPLICATION/X-YAML")));
        assert!(!is_textual(Some("application/jsonp")));
        assert!(!is_textual(Some("tex")));
        assert!(!is_textual(Some("json")));
    }
}
