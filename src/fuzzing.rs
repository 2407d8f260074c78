//! The entry points of the fuzz targets (`fuzz/`, docs/security.md
//! "Fuzzing"): each takes the fuzzer's bytes, drives one parser or rule
//! the network reaches, and panics when an invariant breaks, not only when
//! the code under test does. Built for `cargo fuzz` (which sets
//! `cfg(fuzzing)`) and for the tests, which replay every checked-in corpus
//! input (`fuzz/corpus/<target>/`) as a regression test.

use std::hint::black_box;
use std::net::IpAddr;
use std::sync::LazyLock;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, header};
use secrecy::SecretString;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use crate::audit::chain::{ChainKey, parse_line, sample_log, verify_text};
use crate::catalog::{Catalog, ParamLocation};
use crate::config::{Limits, SecretDetectionMode, Settings, SettingsSource};
use crate::gitea::call::{CallBody, GiteaCall, MAX_REQUEST_TARGET_BYTES, build_call};
use crate::gitea::encoding::is_wildcard_param;
use crate::gitea::executor::UpstreamResponse;
use crate::gitea::hygiene::redaction::Redactor;
use crate::gitea::hygiene::{ResultPolicy, tool_result};
use crate::gitea::pagination::pagination_from_headers;
use crate::gitea::raw::parse_raw_request;
use crate::http::guards::{HostPolicy, is_valid_authority};
use crate::http::rate_limit::{client_ip, parse_forwarded_ip};
use crate::identity::{Identity, IdentityMode};
use crate::mcp::intake::{MAX_ECHOED_ID_CHARS, check_message};
use crate::oauth::client_auth::PresentedCredentials;
use crate::oauth::params::OAuthParams;
use crate::oauth::redirect_uri::{check_registrable, matches_registered};

/// What a fuzz target calls with the fuzzer's bytes.
pub type FuzzEntry = fn(&[u8]);

/// The names of the targets, as `fuzz/fuzz_targets/<name>.rs` and
/// `fuzz/corpus/<name>/` spell them, with their entry points.
pub const TARGETS: &[(&str, FuzzEntry)] = &[
    ("jsonrpc_intake", jsonrpc_intake),
    ("tool_call", tool_call),
    ("raw_request", raw_request),
    ("redirect_uri", redirect_uri),
    ("oauth_form", oauth_form),
    ("result_pipeline", result_pipeline),
    ("audit_line", audit_line),
    ("link_header", link_header),
    ("forwarded_for", forwarded_for),
    ("host_origin", host_origin),
];

/// The fuzzer's bytes split at the first NUL: two inputs from one.
fn split_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A built path stays under the API base: it starts with `/`, holds no
/// `?`, `#`, backslash, control character or whitespace, and no segment is
/// empty, `.` or `..`, as written or once percent-decoded.
fn assert_path_stays_in_the_api(path: &str) {
    assert!(path.starts_with('/'), "path {path:?} is not absolute");
    assert!(
        !path.contains(['?', '#', '\\'])
            && !path.chars().any(|c| c.is_control() || c.is_whitespace()),
        "path {path:?} holds a character that reshapes the URL"
    );
    for segment in path[1..].split('/') {
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
        assert!(
            !matches!(decoded.as_ref(), "" | "." | ".."),
            "path {path:?} has the segment {segment:?}"
        );
    }
}

/// JSON-RPC intake as `/mcp` sees it: a body rmcp takes passes; any other
/// is answered with a JSON-RPC error object whose code JSON-RPC defines,
/// whose message is one of the fixed texts, and whose `id` is null or the
/// body's own short id. Each body is checked as sent on the wires before
/// and after 2026-07-28 and with no version header.
pub fn jsonrpc_intake(data: &[u8]) {
    for header_version in [None, Some("2025-11-25"), Some("2026-07-28")] {
        jsonrpc_intake_on_wire(data, header_version);
    }
}

fn jsonrpc_intake_on_wire(data: &[u8], header_version: Option<&str>) {
    let Err(refusal) = check_message(black_box(data), header_version) else {
        return;
    };
    let answer: Value = serde_json::from_str(&refusal.response_body()).expect("the answer is JSON");
    assert_eq!(answer["jsonrpc"], "2.0");
    let code = answer["error"]["code"].as_i64().expect("a numeric code");
    assert!([-32700, -32600, -32602].contains(&code), "code {code}");
    let message = answer["error"]["message"].as_str().expect("a message");
    assert_eq!(
        message,
        refusal.kind.message(),
        "the message is a fixed text"
    );
    let id = &answer["id"];
    if !id.is_null() {
        let sent: Value = serde_json::from_slice(data).expect("an echoed id was read from JSON");
        assert_eq!(&sent["id"], id, "the id echoed is the body's own");
        assert!(
            id.as_str()
                .is_none_or(|s| s.chars().count() <= MAX_ECHOED_ID_CHARS)
        );
    }
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(Catalog::bundled);

/// Tool arguments to the built call, for a catalog operation the first
/// two bytes pick: the rest, split at `0xFF`, fills its path and query
/// parameters as strings.
pub fn tool_call(data: &[u8]) {
    let [a, b, rest @ ..] = data else { return };
    let ops = CATALOG.operations();
    let op = &ops[usize::from(u16::from_le_bytes([*a, *b])) % ops.len()];
    let mut pieces = rest.split(|&byte| byte == 0xFF);
    let mut args = Map::new();
    for param in &op.params {
        if !matches!(param.location, ParamLocation::Path | ParamLocation::Query) {
            continue;
        }
        let Some(piece) = pieces.next() else { break };
        args.insert(param.name.clone(), Value::String(text(piece)));
    }
    let Ok(call) = build_call(op, &args, 1 << 20) else {
        return;
    };
    assert_path_stays_in_the_api(&call.path);
    // The bound, checked by the url crate's serializer (the one reqwest
    // sends with) rather than by the code under test.
    let mut url = url::Url::parse("http://gitea.invalid/").expect("a base URL");
    url.set_path(&format!("/api/v1{}", call.path));
    if !call.query.is_empty() {
        url.query_pairs_mut().extend_pairs(&call.query);
    }
    let target = &url[url::Position::BeforePath..];
    assert!(
        target.len() <= MAX_REQUEST_TARGET_BYTES,
        "a {}-byte target was built",
        target.len()
    );
    // A route without a wildcard keeps its shape: one value, one segment.
    let wildcard = op
        .params
        .iter()
        .any(|p| p.location == ParamLocation::Path && is_wildcard_param(&op.route, &p.name));
    if !wildcard {
        assert_eq!(
            call.path.matches('/').count(),
            op.route.matches('/').count(),
            "{} built {:?}",
            op.route,
            call.path
        );
    }
}

/// The raw tool's arguments: the first byte picks the method and the mode,
/// the rest is the path.
pub fn raw_request(data: &[u8]) {
    let [selector, path @ ..] = data else { return };
    const METHODS: [&str; 7] = ["GET", "head", "POST", "PUT", "PATCH", "DELETE", "TRACE"];
    let mut args = Map::new();
    args.insert(
        "method".into(),
        METHODS[usize::from(*selector) % METHODS.len()].into(),
    );
    args.insert("path".into(), text(path).into());
    let read_only = selector & 0x80 != 0;
    let Ok(raw) = parse_raw_request(&args, read_only) else {
        return;
    };
    assert_path_stays_in_the_api(&raw.call.path);
    if read_only {
        assert!(matches!(raw.call.method.as_str(), "GET" | "HEAD"));
    }
}

/// Redirect URIs: `registered NUL presented`. A presented URI matches only
/// a registrable one, and only when it is that URI, or an http loopback
/// URI that differs from it in nothing but the port.
pub fn redirect_uri(data: &[u8]) {
    let (registered, presented) = split_nul(data);
    let (registered, presented) = (text(registered), text(presented));
    if check_registrable(&registered, &[]).is_err() {
        return;
    }
    if !matches_registered(&presented, &registered) || presented == registered {
        return;
    }
    let without_port = |uri: &str| {
        let mut url = url::Url::parse(uri).ok()?;
        let loopback = match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name == "localhost",
            None => false,
        };
        (url.scheme() == "http" && loopback).then_some(())?;
        url.set_port(None).ok()?;
        Some(url.to_string())
    };
    let (p, r) = (without_port(&presented), without_port(&registered));
    assert!(
        p.is_some() && p == r,
        "{presented:?} matched {registered:?}, which is neither it nor a loopback URI with another port"
    );
}

/// The token and revoke endpoints' input: `Authorization header NUL form
/// body`. Parsing is bounded, and two client authentications are refused.
pub fn oauth_form(data: &[u8]) {
    let (authorization, form) = split_nul(data);
    let Ok(params) = OAuthParams::parse(form) else {
        return;
    };
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_bytes(authorization) {
        headers.insert(header::AUTHORIZATION, value);
    }
    let presented = PresentedCredentials::read(&headers, &params);
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"));
    if basic && params.get("client_secret").is_some() {
        assert!(
            presented.is_err(),
            "Basic and a form secret were both accepted"
        );
    }
}

/// The result pipeline with a planted secret: the first byte picks the
/// mode, the body type and the bounds; the next 11 make the secret; every
/// NUL of the rest becomes the secret. It never reaches the output, which
/// is JSON within its bounds.
pub fn result_pipeline(data: &[u8]) {
    let [flags, rest @ ..] = data else { return };
    if rest.len() < 11 {
        return;
    }
    let (seed, body) = rest.split_at(11);
    let secret = planted_secret(seed);
    let planted = plant_secret(body, &secret);
    let mode = match flags % 3 {
        0 => SecretDetectionMode::Off,
        1 => SecretDetectionMode::Mask,
        _ => SecretDetectionMode::Block,
    };
    let limits = Limits {
        max_tool_response_items: usize::from(flags >> 4),
        max_tool_response_chars: if flags & 0x08 != 0 { 600 } else { 200_000 },
        ..Limits::default()
    };
    let policy = ResultPolicy::new(&limits, mode);
    let content_type = if flags & 0x04 != 0 {
        "text/plain; charset=utf-8"
    } else {
        "application/json"
    };
    let response = UpstreamResponse {
        status: 200,
        content_type: Some(content_type.into()),
        total_count: None,
        link: None,
        body: Bytes::from(planted),
        body_truncated: false,
    };
    let identity = fuzz_identity();
    let call = issues_call();
    let redactor = Redactor::new([secret.as_str()]);
    let shown = match tool_result(
        &identity,
        &call,
        &response,
        &policy,
        &redactor,
        None,
        crate::gitea::hygiene::ResultView::Full,
    ) {
        Ok(text) => {
            assert!(
                serde_json::from_str::<IgnoredAny>(&text).is_ok(),
                "the envelope is not JSON: {text}"
            );
            assert!(
                text.chars().count() <= limits.max_tool_response_chars,
                "the envelope is over its bound"
            );
            text
        }
        Err(err) => err.to_json().to_string(),
    };
    assert!(!shown.contains(&secret), "{secret} survived: {shown}");
}

/// The secret [`result_pipeline`] plants: `S` and a character of its
/// alphabet for each byte of `seed`.
fn planted_secret(seed: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::iter::once('S')
        .chain(
            seed.iter()
                .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()])),
        )
        .collect()
}

/// `body` with every NUL replaced by `secret`.
fn plant_secret(body: &[u8], secret: &str) -> Vec<u8> {
    let mut planted = Vec::with_capacity(body.len());
    for &byte in body {
        if byte == 0 {
            planted.extend_from_slice(secret.as_bytes());
        } else {
            planted.push(byte);
        }
    }
    planted
}

/// The caller a fuzzed result is shown to.
fn fuzz_identity() -> Identity {
    Identity {
        login: Some("fuzz".into()),
        mode: IdentityMode::Bearer,
        token: SecretString::from("fuzz-token-0123456789"),
        refresh_token: None,
        renewal: None,
        access: crate::identity::Access::ReadWrite,
    }
}

/// The Gitea call a fuzzed result answers: a list of issues.
fn issues_call() -> GiteaCall {
    GiteaCall {
        method: http::Method::GET,
        path: "/repos/o/r/issues".into(),
        route: "/repos/{owner}/{repo}/issues".into(),
        query: vec![],
        body: CallBody::None,
        sudo: None,
    }
}

fn keyed() -> ChainKey {
    ChainKey::new(Some(b"fuzz-key-0123456789abcdef-012345"))
}

/// A valid three-entry log, chained with [`keyed`].
static THREE_ENTRIES: LazyLock<String> = LazyLock::new(|| sample_log(&keyed(), 3));

/// `audit verify` over any text, and the chain's promise: a valid log with
/// one byte changed (the first two bytes pick where, the third what) does
/// not verify.
pub fn audit_line(data: &[u8]) {
    let text = text(data);
    for line in text.lines() {
        black_box(parse_line(line).is_ok());
    }
    black_box(verify_text(&keyed(), &text).is_ok());
    black_box(verify_text(&ChainKey::new(None), &text).is_ok());

    let [a, b, replacement, ..] = data else {
        return;
    };
    let mut log = THREE_ENTRIES.as_bytes().to_vec();
    let at = usize::from(u16::from_le_bytes([*a, *b])) % log.len();
    if log[at] == b'\n' || log[at] == *replacement || *replacement == b'\n' {
        return;
    }
    log[at] = *replacement;
    let edited = String::from_utf8_lossy(&log);
    assert!(
        verify_text(&keyed(), &edited).is_err(),
        "byte {at} changed to {replacement:#04x} and the log still verifies"
    );
}

/// Gitea's `Link` header (and the page arguments beside it) to the
/// envelope's pagination: any text, no panic, always JSON.
pub fn link_header(data: &[u8]) {
    let [page, limit, rest @ ..] = data else {
        return;
    };
    let link = text(rest);
    let pagination = pagination_from_headers(
        Some(u64::from(*page) * 7),
        Some(&link),
        Some(u64::from(*page)),
        Some(u64::from(*limit)),
    );
    black_box(serde_json::to_string(&pagination).is_ok());
}

/// `X-Forwarded-For` behind a trusted proxy or not. The client address is
/// never taken from the header when the peer is untrusted; otherwise it is
/// the peer, or an entry of the header of which every hop to its right
/// (nearer the gateway) is a trusted proxy: never an address an untrusted
/// hop could have written.
pub fn forwarded_for(data: &[u8]) {
    let [selector, rest @ ..] = data else { return };
    let trusted: [ipnet::IpNet; 2] = ["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()];
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    let peer: IpAddr = if selector & 1 == 0 {
        "10.1.2.3".parse().unwrap()
    } else {
        "203.0.113.9".parse().unwrap()
    };
    let mut headers = HeaderMap::new();
    for value in rest.split(|&b| b == b'\n') {
        if let Ok(value) = HeaderValue::from_bytes(value) {
            headers.append("x-forwarded-for", value);
        }
    }
    let client = client_ip(peer, &headers, &trusted);
    if !is_trusted(&peer) {
        assert_eq!(client, peer, "an untrusted peer's header was believed");
        return;
    }
    if client == peer {
        return;
    }
    let hops: Vec<Option<IpAddr>> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|entry| parse_forwarded_ip(entry.trim()))
        .collect();
    let vouched_for = (0..hops.len()).any(|i| {
        hops[i] == Some(client)
            && hops[i + 1..]
                .iter()
                .all(|hop| hop.is_some_and(|ip| is_trusted(&ip)))
    });
    assert!(
        vouched_for,
        "{client} was taken from a hop no trusted proxy vouches for: {hops:?}"
    );
}

static HOST_POLICY: LazyLock<HostPolicy> = LazyLock::new(|| {
    let pairs = [
        ("GITEA_URL", "http://127.0.0.1:3000"),
        ("PUBLIC_BASE_URL", "https://mcp.example.com"),
        ("ALLOWED_HOSTS", "alias.example:8443,[2001:db8::1]"),
    ];
    let settings = Settings::from_source(&SettingsSource::from_pairs(pairs)).expect("settings");
    HostPolicy::from_settings(&settings)
});

/// `Host NUL Origin` through the `Host` and `Origin` guards. A `Host` the
/// strict reader accepts is one authority to the `http` and `url` crates
/// as well (so a proxy in front reads the same host), and one it allows
/// names an allowed host as `url` reads it. An allowed `Origin` is exactly
/// a serialized origin (scheme, host, port; no path, user or query) of
/// ours.
pub fn host_origin(data: &[u8]) {
    let (host, origin) = split_nul(data);
    let policy = &*HOST_POLICY;
    if let Ok(host) = std::str::from_utf8(host)
        && is_valid_authority(black_box(host))
    {
        assert!(
            host.parse::<http::uri::Authority>().is_ok(),
            "http rejects {host:?}"
        );
        let url = url::Url::parse(&format!("http://{host}/"))
            .unwrap_or_else(|e| panic!("url rejects the accepted Host {host:?}: {e}"));
        if policy.allows_host(host) {
            let read = url.host_str().expect("a host").trim_matches(['[', ']']);
            assert!(
                policy.hosts().iter().any(|h| h == read),
                "{host:?} let {read:?} in"
            );
        }
    }
    if let Ok(origin) = std::str::from_utf8(origin)
        && policy.allows_origin(black_box(origin))
    {
        let url = url::Url::parse(origin).expect("an allowed Origin parses");
        assert_eq!(
            url.origin().ascii_serialization(),
            origin,
            "an allowed Origin is a serialized origin"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::TARGETS;
    use std::path::Path;

    /// Every checked-in input of every target (the seeds, and each input
    /// a fuzzing run found) runs through its entry point.
    #[test]
    fn every_corpus_input_keeps_its_invariants() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
        for (name, entry) in TARGETS {
            let dir = root.join(name);
            let inputs: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .map(|entry| entry.unwrap().path())
                .collect();
            assert!(!inputs.is_empty(), "{name} has no seed inputs");
            for input in inputs {
                let bytes = std::fs::read(&input).unwrap();
                entry(&bytes);
            }
        }
    }
}
