//! Request guards that run before rate limiting and authentication: the
//! `Host` allowlist on every route (421 otherwise); on `/mcp` the `Origin`
//! check (403 for a foreign origin, the DNS-rebinding defence the MCP
//! specification asks for), `application/json` for `POST` (415) and the
//! declared body size (413). They run first so a rebinding attempt never
//! reaches the token check or the admin login lookup. The pages have their
//! own Origin rule (`crate::page_kit::check_origin`).

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::step::Step;
use crate::config::Settings;

/// The hosts and ports this server answers for.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// Lowercase host names or addresses, without ports or brackets.
    hosts: Vec<String>,
    /// Ports an `Origin` may name: the bind port and the public URL's port.
    ports: Vec<u16>,
    /// Whether any IP literal passes the `Host` check too (the metrics
    /// listener, which a scraper reaches by address).
    addresses: bool,
}

impl HostPolicy {
    /// Loopback names, the bind address (unless it is the wildcard), the
    /// public URL's host and `ALLOWED_HOSTS`.
    pub fn from_settings(settings: &Settings) -> Self {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .iter()
            .map(|h| h.to_string())
            .collect();
        if !settings.mcp_host.is_unspecified() {
            hosts.push(settings.mcp_host.to_string());
        }
        if let Some(host) = settings.public_base_url.host_str() {
            hosts.push(strip_brackets(host).to_ascii_lowercase());
        }
        let mut ports = vec![settings.mcp_port];
        if let Some(port) = settings.public_base_url.port_or_known_default() {
            ports.push(port);
        }
        // An entry may carry a port (`alias.example:8443`): the name joins the
        // hosts (any port in `Host`), the port joins the ports an `Origin` may name.
        for entry in &settings.allowed_hosts {
            let (host, port) = split_host_port(entry);
            hosts.push(strip_brackets(host).to_ascii_lowercase());
            if let Some(port) = port.and_then(|p| p.parse::<u16>().ok()) {
                ports.push(port);
            }
        }
        hosts.sort();
        hosts.dedup();
        ports.sort_unstable();
        ports.dedup();
        Self {
            hosts,
            ports,
            addresses: false,
        }
    }

    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The same names, and any IP literal: for the metrics listener, which
    /// a scraper reaches by address. (DNS rebinding needs a name.)
    pub fn accepting_addresses(mut self) -> Self {
        self.addresses = true;
        self
    }

    /// True when a `Host` value (`name`, `name:port`, `[v6]:port`) names us.
    pub fn allows_host(&self, host_header: &str) -> bool {
        let host = split_host_port(host_header).0;
        if self.addresses && strip_brackets(host).parse::<std::net::IpAddr>().is_ok() {
            return true;
        }
        self.hosts.contains(&host.to_ascii_lowercase())
    }

    /// True when an `Origin` is one of ours: our host and one of our ports,
    /// written as a browser serializes an origin (RFC 6454 §6.2: scheme,
    /// host and non-default port, lowercase, nothing else). No path, user
    /// or query, which no browser sends.
    pub fn allows_origin(&self, origin: &str) -> bool {
        let Ok(url) = url::Url::parse(origin) else {
            return false;
        };
        if url.origin().ascii_serialization() != origin {
            return false;
        }
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return false;
        };
        matches!(url.scheme(), "http" | "https")
            && self.hosts.iter().any(|h| *h == strip_brackets(host))
            && self.ports.contains(&port)
    }
}

fn strip_brackets(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// Splits `host[:port]`, understanding bracketed IPv6.
fn split_host_port(value: &str) -> (&str, Option<&str>) {
    if let Some(rest) = value.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':')),
            None => (rest, None),
        };
    }
    match value.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, Some(port)),
        _ => (value, None),
    }
}

/// Why a request's `Host` cannot be read as one authority (400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostProblem {
    /// No `Host` header and no authority in the target.
    Missing,
    /// More than one `Host` header.
    Repeated,
    /// Not `host[:port]`: whitespace, a non-numeric or out-of-range port,
    /// userinfo, an unclosed IPv6 bracket, a name a URL parser reads as an
    /// address.
    Malformed,
    /// An absolute-form target (or HTTP/2 `:authority`) naming another
    /// authority than the `Host` header.
    Disagrees,
}

/// The one authority a request names: its single `Host` header, or the
/// target's authority (HTTP/2), and both agree when both are there. Strict
/// on purpose: a lenient reading (`127.0.0.1:evil` as `127.0.0.1`, the first
/// of two headers) would let a proxy in front and this check see different
/// hosts.
fn request_host(request: &Request) -> Result<String, HostProblem> {
    let mut headers = request.headers().get_all(header::HOST).iter();
    let header = headers.next();
    if headers.next().is_some() {
        return Err(HostProblem::Repeated);
    }
    let header = match header {
        Some(value) => Some(value.to_str().map_err(|_| HostProblem::Malformed)?),
        None => None,
    };
    let target = request.uri().authority().map(|a| a.as_str());
    let host = match (header, target) {
        (Some(header), Some(target)) if !header.eq_ignore_ascii_case(target) => {
            return Err(HostProblem::Disagrees);
        }
        (Some(host), _) | (None, Some(host)) => host,
        (None, None) => return Err(HostProblem::Missing),
    };
    if !is_valid_authority(host) {
        return Err(HostProblem::Malformed);
    }
    Ok(host.to_owned())
}

/// `host[:port]` (RFC 9110 §7.2) with a registered name of letters, digits,
/// `-`, `.` and `_`, a dotted-decimal IPv4 address, or a bracketed IPv6
/// address, and a port of 1 to 5 digits up to 65535. No whitespace,
/// userinfo or percent-encoding, and no name a URL parser reads as an
/// address.
pub(crate) fn is_valid_authority(value: &str) -> bool {
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let Some((v6, tail)) = rest.split_once(']') else {
            return false;
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match tail {
            "" => (v6, None),
            _ => match tail.strip_prefix(':') {
                Some(port) => (v6, Some(port)),
                None => return false,
            },
        }
    } else {
        let (host, port) = match value.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (value, None),
        };
        let name_ok = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        // A name check alone would take `0x7f.1`, `127.1` or `eie.x.0` for
        // names, while a URL parser (a browser's, a proxy's) reads them as
        // an IPv4 address or refuses them. A host is valid only when the
        // WHATWG reading (the `url` crate) writes it back unchanged.
        if !name_ok
            || !url::Host::parse(host).is_ok_and(|read| read.to_string().eq_ignore_ascii_case(host))
        {
            return false;
        }
        (host, port)
    };
    let port_ok = port.is_none_or(|port| {
        (1..=5).contains(&port.len())
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u16>().is_ok()
    });
    !host.is_empty() && port_ok
}

fn bad_host(problem: HostProblem) -> Response {
    let message = match problem {
        HostProblem::Missing => "the request names no Host",
        HostProblem::Repeated => "the request has more than one Host header",
        HostProblem::Malformed => {
            "Host must be host[:port]: a name, a dotted-decimal or bracketed IPv6 address, and a numeric port"
        }
        HostProblem::Disagrees => "the request target and Host name different authorities",
    };
    (StatusCode::BAD_REQUEST, message).into_response()
}

fn misdirected() -> Response {
    (
        StatusCode::MISDIRECTED_REQUEST,
        "this server does not answer for that Host",
    )
        .into_response()
}

fn cross_origin_refused() -> Response {
    (
        StatusCode::FORBIDDEN,
        "cross-origin requests are not allowed here",
    )
        .into_response()
}

/// The step on every route: 400 for a `Host` that is not one valid
/// authority, 421 for a foreign one.
#[derive(Debug, Clone)]
pub struct CheckHost(pub Arc<HostPolicy>);

impl Step for CheckHost {
    type Carry = ();

    fn before(&self, request: &Request) -> Result<(), Response> {
        match request_host(request) {
            Err(problem) => Err(bad_host(problem)),
            Ok(host) if !self.0.allows_host(&host) => Err(misdirected()),
            Ok(_) => Ok(()),
        }
    }

    fn after(&self, (): (), response: Response) -> Response {
        response
    }
}

/// What `/mcp` checks before rate limiting and authentication.
#[derive(Debug, Clone)]
pub struct McpGuard {
    pub policy: Arc<HostPolicy>,
    /// `Limits::mcp_max_body_bytes`; a declared `Content-Length` above it
    /// is refused before anything is read (rmcp enforces the same limit on
    /// streamed bodies).
    pub max_body_bytes: usize,
}

impl McpGuard {
    /// The first step on `/mcp` (`super::mcp_gate`): 403 for any `Origin`
    /// that is not ours (the DNS-rebinding defence), 415 for a `POST` that
    /// is not `application/json`, 413 for a declared body over the limit.
    #[expect(
        clippy::result_large_err,
        reason = "the answer axum sends in the request's place, as the other steps of `mcp_gate` return it"
    )]
    pub fn check(&self, request: &Request) -> Result<(), Response> {
        if let Some(origin) = request.headers().get(header::ORIGIN)
            && !origin.to_str().is_ok_and(|o| self.policy.allows_origin(o))
        {
            return Err(cross_origin_refused());
        }
        if request.method() == Method::POST && !is_json(request.headers()) {
            return Err((
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type must be application/json",
            )
                .into_response());
        }
        if declared_length(request.headers()).is_some_and(|n| n > self.max_body_bytes as u64) {
            return Err((StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response());
        }
        Ok(())
    }
}

/// True when `Content-Type`'s media type is `application/json`.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_names_and_addresses_are_valid_authorities() {
        for ok in [
            "localhost",
            "127.0.0.1:8080",
            "mcp.example.com",
            "[::1]:8080",
            "[::1]",
            "a_b.example:443",
        ] {
            assert!(is_valid_authority(ok), "{ok}");
        }
    }

    #[test]
    fn lenient_host_forms_are_not_valid_authorities() {
        for bad in [
            "",
            ":8080",
            "127.0.0.1:evil",
            "127.0.0.1:",
            "127.0.0.1:65536",
            "127.0.0.1:080800",
            "127.0.0.1 ",
            "a b",
            "user@host",
            "host%2e",
            "[::1",
            "[::1]x",
            "[zz]",
            "a:1:2",
        ] {
            assert!(!is_valid_authority(bad), "{bad:?}");
        }
    }

    /// A browser or proxy reading the Host as a URL reads these as an IPv4
    /// address (or fails to), while a plain name check would take them for
    /// names: the two readings must not differ (the host_origin fuzz target
    /// found `eie.x.0`).
    #[test]
    fn a_host_that_a_url_parser_reads_otherwise_is_not_a_valid_authority() {
        for bad in [
            "eie.x.0",
            "name.0x7f",
            "0x7f.1",
            "2130706433",
            "127.1",
            "0177.0.0.1:8080",
            "127.0.0.1.",
        ] {
            assert!(!is_valid_authority(bad), "{bad:?}");
        }
    }
    use crate::config::SettingsSource;

    fn policy(pairs: &[(&str, &str)]) -> HostPolicy {
        let mut all = vec![("GITEA_URL", "http://127.0.0.1:3000")];
        all.extend_from_slice(pairs);
        HostPolicy::from_settings(
            &Settings::from_source(&SettingsSource::from_pairs(all.iter().copied())).unwrap(),
        )
    }

    #[test]
    fn loopback_names_are_always_allowed() {
        let p = policy(&[]);
        for host in [
            "localhost:8080",
            "127.0.0.1:8080",
            "[::1]:8080",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert!(p.allows_host(host), "{host}");
        }
    }

    #[test]
    fn foreign_hosts_are_refused() {
        let p = policy(&[]);
        for host in [
            "evil.example.com",
            "evil.example.com:8080",
            "127.0.0.1.evil.com",
            "",
        ] {
            assert!(!p.allows_host(host), "{host}");
        }
    }

    #[test]
    fn public_url_host_and_allowed_hosts_are_added() {
        let p = policy(&[
            ("PUBLIC_BASE_URL", "https://mcp.example.com"),
            ("ALLOWED_HOSTS", "alias.example.com"),
        ]);
        assert!(p.allows_host("mcp.example.com"));
        assert!(p.allows_host("alias.example.com:443"));
    }

    #[test]
    fn allowed_hosts_entries_may_carry_a_port() {
        let p = policy(&[("ALLOWED_HOSTS", "alias.example.com:8443,[fd00::1]:9000")]);
        assert!(p.allows_host("alias.example.com:8443"));
        assert!(p.allows_host("alias.example.com"));
        assert!(p.allows_host("[fd00::1]:9000"));
        assert!(p.allows_origin("https://alias.example.com:8443"));
        assert!(!p.allows_origin("https://alias.example.com:9443"));
    }

    #[test]
    fn the_metrics_listener_also_accepts_addresses() {
        assert!(!policy(&[]).allows_host("10.0.0.5:9464"));
        let p = policy(&[]).accepting_addresses();
        assert!(p.allows_host("10.0.0.5:9464"));
        assert!(p.allows_host("[fd00::5]:9464"));
        assert!(p.allows_host("localhost:9464"));
        assert!(!p.allows_host("rebind.evil.example:9464"));
    }

    #[test]
    fn wildcard_bind_address_is_not_a_host() {
        let p = policy(&[
            ("MCP_HOST", "0.0.0.0"),
            ("MCP_BEARER_TOKEN", "0123456789abcdef0123456789abcdef"),
        ]);
        assert!(!p.allows_host("0.0.0.0:8080"));
    }

    #[test]
    fn own_origins_pass_and_foreign_ones_do_not() {
        let p = policy(&[("PUBLIC_BASE_URL", "https://mcp.example.com")]);
        assert!(p.allows_origin("https://mcp.example.com"));
        assert!(p.allows_origin("http://127.0.0.1:8080"));
        assert!(!p.allows_origin("https://evil.example.com"));
        assert!(!p.allows_origin("http://127.0.0.1:9999"));
        assert!(!p.allows_origin("null"));
        assert!(!p.allows_origin("file://"));
    }

    #[test]
    fn an_origin_is_refused_unless_written_as_a_browser_serializes_it() {
        let p = policy(&[("PUBLIC_BASE_URL", "https://mcp.example.com")]);
        for written in [
            "http://127.0.0.1:8080/",
            "http://127.0.0.1:8080/path",
            "http://user@127.0.0.1:8080",
            "http://127.0.0.1:8080?q",
            "HTTP://127.0.0.1:8080",
            "https://mcp.example.com:443",
        ] {
            assert!(!p.allows_origin(written), "{written}");
        }
    }

    #[test]
    fn json_content_types_are_recognised() {
        let with = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(
                header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static(v),
            );
            h
        };
        assert!(is_json(&with("application/json")));
        assert!(is_json(&with("Application/JSON; charset=utf-8")));
        assert!(!is_json(&with("text/plain")));
        assert!(!is_json(&with("application/json-patch+json")));
        assert!(!is_json(&with("application/x-www-form-urlencoded")));
        assert!(!is_json(&HeaderMap::new()));
    }
}
