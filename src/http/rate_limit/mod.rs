//! Rate limits at the HTTP edge, before authentication: a sliding window
//! per client IP and per SHA-256 of the `Authorization` value (the value
//! itself is never stored). Refusals are `429` with `Retry-After`.
//!
//! The window is a two-bucket sliding-window counter: the estimate is the
//! previous minute's count weighted by how much of it still overlaps the
//! window, plus the current minute's count. Refused requests are not
//! counted, so `Retry-After` is exact for a client that waits.
//!
//! Key sets are bounded ([`MAX_KEYS`]). When a set is full, room is made by
//! dropping keys whose window has expired and then the least recently seen
//! keys that are *not* over their limit; a limited key is never evicted or
//! reset, so a flood of fresh IPs or tokens cannot free a limited client
//! (SEC-09). When every key is limited, new keys share one overflow window.
//!
//! A refusal is reported once per window per key through [`RateLimitHook`]
//! (by default a `tracing` event with `target: "audit"`).

mod shared;
mod window;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

pub use shared::{SharedKey, SharedWindows};
pub use window::{Decision, KeyedLimiter, MAX_KEYS, WINDOW};

use crate::client_address::ClientAddress;
use crate::config::Settings;

/// Which key set refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Ip,
    Token,
}

impl KeyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyKind::Ip => "ip",
            KeyKind::Token => "token",
        }
    }
}

/// Why a request was refused: which key set, and when to retry. Put into
/// the 429 response's extensions, where the metrics layer counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverLimit {
    pub key_kind: KeyKind,
    pub retry_after: Duration,
}

/// A refusal, reported once per window per key.
#[derive(Debug, Clone)]
pub struct RateLimitEvent {
    pub key_kind: KeyKind,
    /// The client IP (for `Ip`), or the first 12 hex digits of the token
    /// hash (for `Token`); `overflow` for the shared overflow window.
    pub key: String,
    pub path: String,
    pub retry_after: Duration,
}

/// Receives rate-limit events; the audit log plugs in here.
pub type RateLimitHook = Arc<dyn Fn(&RateLimitEvent) + Send + Sync>;

/// The default hook: a `tracing` event on the `audit` target.
pub fn tracing_hook() -> RateLimitHook {
    Arc::new(|event: &RateLimitEvent| {
        tracing::warn!(
            target: "audit",
            event = "rate_limited",
            key_kind = event.key_kind.as_str(),
            key = %event.key,
            path = %event.path,
            retry_after_secs = event.retry_after.as_secs(),
            "rate limit exceeded"
        );
    })
}

/// The limiter shared by the rate-limited routes.
pub struct RateLimiter {
    per_ip: Mutex<KeyedLimiter<IpAddr>>,
    per_token: Mutex<KeyedLimiter<[u8; 32]>>,
    limits: (u32, u32),
    /// The windows every replica shares (PostgreSQL store), checked after
    /// this process's own.
    shared: Option<SharedWindows>,
    trusted_proxies: Vec<ipnet::IpNet>,
    hook: RateLimitHook,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("trusted_proxies", &self.trusted_proxies)
            .finish_non_exhaustive()
    }
}

impl RateLimiter {
    pub fn new(per_ip: u32, per_token: u32, trusted_proxies: Vec<ipnet::IpNet>) -> Self {
        Self {
            per_ip: Mutex::new(KeyedLimiter::new(per_ip, WINDOW, MAX_KEYS)),
            per_token: Mutex::new(KeyedLimiter::new(per_token, WINDOW, MAX_KEYS)),
            limits: (per_ip, per_token),
            shared: None,
            trusted_proxies,
            hook: tracing_hook(),
        }
    }

    pub fn from_settings(settings: &Settings) -> Self {
        Self::new(
            settings.rate_limits.per_ip,
            settings.rate_limits.per_token,
            settings.forwarded_allow_ips.clone(),
        )
    }

    /// The limiter of the routes that park state for an unauthenticated
    /// caller (declared on those routes in `http`): per IP only.
    pub fn sign_ins_from_settings(settings: &Settings) -> Self {
        Self::new(
            settings.rate_limits.sign_ins_per_ip,
            0,
            settings.forwarded_allow_ips.clone(),
        )
    }

    /// Also enforces the limits in windows shared through `store` when
    /// other processes share it (PostgreSQL), under `name`.
    pub fn with_shared_store(
        mut self,
        store: Option<Arc<dyn crate::store::RateLimitStore>>,
        name: &'static str,
    ) -> Self {
        self.shared = store
            .filter(|s| s.shares_rate_limits())
            .map(|s| SharedWindows::new(s, name));
        self
    }

    /// Replaces the event hook (the audit log).
    pub fn with_hook(mut self, hook: RateLimitHook) -> Self {
        self.hook = hook;
        self
    }

    /// The client's address: the peer, or, when the peer is a trusted
    /// proxy, the right-most `X-Forwarded-For` entry that is not one.
    pub fn client_ip(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        client_ip(peer, headers, &self.trusted_proxies)
    }

    /// Checks one request; the refusal, if any.
    pub fn check(
        &self,
        client: IpAddr,
        authorization: Option<&[u8]>,
        path: &str,
        now: Instant,
    ) -> Option<OverLimit> {
        self.check_digest(client, token_digest(authorization).as_ref(), path, now)
    }

    /// [`check`](Self::check) with the `Authorization` value already hashed.
    fn check_digest(
        &self,
        client: IpAddr,
        digest: Option<&[u8; 32]>,
        path: &str,
        now: Instant,
    ) -> Option<OverLimit> {
        let key = address_key(client);
        let decision = lock(&self.per_ip).check(&key, now);
        if let Some(retry) = self.refusal(decision, KeyKind::Ip, || address_key_label(key), path) {
            return Some(retry);
        }
        let digest = digest?;
        let decision = lock(&self.per_token).check(digest, now);
        self.refusal(decision, KeyKind::Token, || hex_prefix(digest), path)
    }

    /// Checks one request against the shared windows (after [`check`]
    /// passed it); `None` without shared windows.
    ///
    /// [`check`]: Self::check
    async fn check_shared(
        &self,
        client: IpAddr,
        digest: Option<&[u8; 32]>,
        path: &str,
    ) -> Option<OverLimit> {
        let shared = self.shared.as_ref()?;
        let address = address_key_label(address_key(client));
        let token_key: Option<String> = digest.map(|d| hex(d));
        let mut keys = vec![SharedKey {
            kind: "ip",
            key: &address,
            limit: self.limits.0,
        }];
        if let Some(key) = &token_key {
            keys.push(SharedKey {
                kind: "token",
                key,
                limit: self.limits.1,
            });
        }
        let (index, refused) = shared.check(&keys).await?;
        match (index, digest) {
            (0, _) => self.shared_refusal(refused, KeyKind::Ip, address, path),
            (_, Some(digest)) => {
                self.shared_refusal(refused, KeyKind::Token, hex_prefix(digest), path)
            }
            (_, None) => None,
        }
    }

    fn shared_refusal(
        &self,
        refused: shared::SharedOverLimit,
        key_kind: KeyKind,
        key: String,
        path: &str,
    ) -> Option<OverLimit> {
        self.refusal(
            Decision::Limited {
                retry_after: refused.retry_after,
                report: refused.report,
                overflow: false,
            },
            key_kind,
            || key,
            path,
        )
    }

    fn refusal(
        &self,
        decision: Decision,
        key_kind: KeyKind,
        key: impl FnOnce() -> String,
        path: &str,
    ) -> Option<OverLimit> {
        let Decision::Limited {
            retry_after,
            report,
            overflow,
        } = decision
        else {
            return None;
        };
        if report {
            (self.hook)(&RateLimitEvent {
                key_kind,
                key: if overflow { "overflow".into() } else { key() },
                path: path.to_owned(),
                retry_after,
            });
        }
        Some(OverLimit {
            key_kind,
            retry_after,
        })
    }
}

/// The per-IP key of a client: an IPv4 address, or the /64 an IPv6
/// address is in. One host on IPv6 usually holds a whole /64, and keying by
/// address would give it as many windows as it has addresses.
pub fn address_key(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(_) => client,
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(std::net::Ipv6Addr::from(bits))
        }
    }
}

fn address_key_label(key: IpAddr) -> String {
    match key {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("{v6}/64"),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere cannot leave a window half-updated in a harmful way.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn hex_prefix(digest: &[u8; 32]) -> String {
    hex(&digest[..6])
}

/// The key of an `Authorization` value: its SHA-256 (the value itself is
/// never kept).
fn token_digest(authorization: Option<&[u8]>) -> Option<[u8; 32]> {
    authorization.map(|value| Sha256::digest(value).into())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// See [`RateLimiter::client_ip`].
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[ipnet::IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    if !is_trusted(&peer) {
        return peer;
    }
    let entries: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for entry in entries.iter().rev() {
        let Some(ip) = parse_forwarded_ip(entry) else {
            // Garbage comes from the client side: trust the hop before it.
            return client;
        };
        client = ip;
        if !is_trusted(&ip) {
            return ip;
        }
    }
    client
}

/// An `X-Forwarded-For` entry: an address, maybe `[v6]` or `v4:port`.
pub(crate) fn parse_forwarded_ip(entry: &str) -> Option<IpAddr> {
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    entry
        .parse::<SocketAddr>()
        .ok()
        .map(|a| a.ip().to_canonical())
        .or_else(|| {
            entry
                .strip_prefix('[')
                .and_then(|e| e.strip_suffix(']'))
                .and_then(|e| e.parse().ok())
        })
}

/// Middleware: 429 with `Retry-After` for a client over its limit.
pub async fn limit(
    State(limiter): State<Arc<RateLimiter>>,
    request: Request,
    next: Next,
) -> Response {
    match count_request(&limiter, request).await {
        Ok(request) => next.run(request).await,
        Err(refusal) => refusal,
    }
}

/// The request with its client's address in its extensions, or the 429
/// with `Retry-After` for a client over its limit.
pub async fn count_request(limiter: &RateLimiter, request: Request) -> Result<Request, Response> {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip().to_canonical())
        // Served without connection info (in-process tests): one shared key.
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let client = limiter.client_ip(peer, request.headers());
    // The handlers that count per network read the same address.
    let mut request = request;
    request.extensions_mut().insert(ClientAddress(client));
    // Hashed once for both windows.
    let digest = token_digest(
        request
            .headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes),
    );
    let path = request.uri().path();
    let refusal = match limiter.check_digest(client, digest.as_ref(), path, Instant::now()) {
        None => limiter.check_shared(client, digest.as_ref(), path).await,
        refused => refused,
    };
    match refusal {
        None => Ok(request),
        Some(refusal) => Err(too_many_requests(refusal)),
    }
}

fn too_many_requests(refusal: OverLimit) -> Response {
    // Whole seconds, rounded up, at least 1.
    let retry_after = refusal.retry_after;
    let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (header::RETRY_AFTER, seconds.max(1).to_string()),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        axum::Extension(refusal),
        "too many requests; retry later",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn nets(list: &[&str]) -> Vec<ipnet::IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    #[test]
    fn forwarded_for_is_ignored_from_untrusted_peers() {
        let peer: IpAddr = "203.0.113.9".parse().unwrap();
        let h = headers(&["1.2.3.4"]);
        assert_eq!(client_ip(peer, &h, &[]), peer);
        assert_eq!(client_ip(peer, &h, &nets(&["10.0.0.0/8"])), peer);
    }

    #[test]
    fn forwarded_for_from_a_trusted_proxy_gives_the_rightmost_untrusted_entry() {
        let peer: IpAddr = "10.0.0.2".parse().unwrap();
        let trusted = nets(&["10.0.0.0/8"]);
        let h = headers(&["6.6.6.6, 198.51.100.7, 10.0.0.5"]);
        assert_eq!(
            client_ip(peer, &h, &trusted),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        // Several headers are one list.
        let h = headers(&["6.6.6.6", "198.51.100.8:4711"]);
        assert_eq!(
            client_ip(peer, &h, &trusted),
            "198.51.100.8".parse::<IpAddr>().unwrap()
        );
        // No header, or garbage: the last trusted hop.
        assert_eq!(client_ip(peer, &HeaderMap::new(), &trusted), peer);
        let h = headers(&["garbage, 10.0.0.9"]);
        assert_eq!(
            client_ip(peer, &h, &trusted),
            "10.0.0.9".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn ipv6_clients_are_limited_by_their_64() {
        let limiter = RateLimiter::new(2, 100, vec![]);
        let t0 = Instant::now();
        let host = |i: u16| -> IpAddr { format!("2001:db8:1:2::{i:x}").parse().unwrap() };
        assert!(limiter.check(host(1), None, "/register", t0).is_none());
        assert!(limiter.check(host(2), None, "/register", t0).is_none());
        // A third address of the same /64 shares its window.
        assert!(limiter.check(host(3), None, "/register", t0).is_some());
        // Another /64 does not.
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(limiter.check(other, None, "/register", t0).is_none());
        // IPv4 addresses stay apart.
        let v4 = |s: &str| -> IpAddr { s.parse().unwrap() };
        assert!(
            limiter
                .check(v4("192.0.2.1"), None, "/register", t0)
                .is_none()
        );
        assert!(
            limiter
                .check(v4("192.0.2.2"), None, "/register", t0)
                .is_none()
        );
    }

    #[test]
    fn the_limiter_keys_tokens_by_hash_and_reports_once() {
        let events = Arc::new(Mutex::new(Vec::<RateLimitEvent>::new()));
        let sink = events.clone();
        let limiter = RateLimiter::new(100, 2, vec![])
            .with_hook(Arc::new(move |e| sink.lock().unwrap().push(e.clone())));
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let t0 = Instant::now();
        let token = b"Bearer secret-token".as_slice();
        assert!(limiter.check(ip, Some(token), "/mcp", t0).is_none());
        assert!(limiter.check(ip, Some(token), "/mcp", t0).is_none());
        assert!(limiter.check(ip, Some(token), "/mcp", t0).is_some());
        assert!(limiter.check(ip, Some(token), "/mcp", t0).is_some());
        // Another token from the same IP is fine.
        assert!(
            limiter
                .check(ip, Some(b"Bearer other"), "/mcp", t0)
                .is_none()
        );
        let events = events.lock().unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].key_kind, KeyKind::Token);
        assert!(!events[0].key.contains("secret"));
    }

    proptest::proptest! {
        /// Behind trusted proxies the client is the rightmost hop that is
        /// not a trusted proxy: an address to its left was written by
        /// someone no trusted proxy vouches for.
        #[test]
        fn the_client_is_the_rightmost_untrusted_hop(
            hops in proptest::collection::vec(proptest::bool::ANY, 0..6),
            last_octets in proptest::collection::vec(1u8..255, 6),
        ) {
            let trusted: Vec<ipnet::IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
            let address = |i: usize, is_trusted: bool| -> IpAddr {
                if is_trusted {
                    format!("10.0.0.{}", last_octets[i]).parse().unwrap()
                } else {
                    format!("198.51.100.{}", last_octets[i]).parse().unwrap()
                }
            };
            let chain: Vec<IpAddr> = hops.iter().enumerate().map(|(i, t)| address(i, *t)).collect();
            let text: Vec<String> = chain.iter().map(IpAddr::to_string).collect();
            let peer: IpAddr = "10.9.9.9".parse().unwrap();
            let expected = chain
                .iter()
                .rev()
                .find(|ip| !trusted[0].contains(*ip))
                .or(chain.first())
                .copied()
                .unwrap_or(peer);
            let joined = text.join(", ");
            proptest::prop_assert_eq!(client_ip(peer, &headers(&[joined.as_str()]), &trusted), expected);
            let outsider: IpAddr = "203.0.113.1".parse().unwrap();
            proptest::prop_assert_eq!(client_ip(outsider, &headers(&[joined.as_str()]), &trusted), outsider);
        }
    }
}
