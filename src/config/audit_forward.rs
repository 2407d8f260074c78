//! `AUDIT_FORWARD_*`: where the audit log is shipped off the host
//! (`docs/audit.md`, "Forwarding").

use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;
use url::Url;

use super::ConfigError;
use super::parse::{is_loopback_url, parse_secret, parse_usize};

/// The default port of syslog over TLS (RFC 5425).
pub const SYSLOG_TLS_PORT: u16 = 6514;

/// The kind of sink, from the URL's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardProtocol {
    /// `syslog+tls://host[:6514]`: RFC 5424 messages, RFC 5425 framing.
    SyslogTls,
    /// `syslog+tcp://` to a loopback relay only (a local rsyslog that
    /// relays on with RELP or TLS): the same framing, no TLS.
    SyslogTcp,
    /// `https://…` (or `http://` to loopback only): JSON lines in a POST.
    Http,
}

/// Where and how the forwarder ships entries.
#[derive(Debug, Clone)]
pub struct AuditForwardSettings {
    pub url: Url,
    pub protocol: ForwardProtocol,
    /// Extra trusted roots (PEM) besides the system's.
    pub ca_file: Option<PathBuf>,
    /// The `Authorization` header of the HTTP sink (a Splunk HEC token,
    /// a bearer).
    pub authorization: Option<SecretString>,
    /// Refuse tool calls while an entry has waited longer than this.
    pub max_lag: Option<Duration>,
}

/// `AUDIT_FORWARD_URL` (unset: no forwarding), `AUDIT_FORWARD_CA_FILE`,
/// `AUDIT_FORWARD_AUTHORIZATION`, `AUDIT_FORWARD_MAX_LAG_MINUTES`.
pub(super) fn audit_forward<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<Option<AuditForwardSettings>, ConfigError> {
    let Some(raw) = get("AUDIT_FORWARD_URL")
        .map(str::trim)
        .filter(|v| !v.is_empty())
    else {
        for dependent in [
            "AUDIT_FORWARD_CA_FILE",
            "AUDIT_FORWARD_AUTHORIZATION",
            "AUDIT_FORWARD_MAX_LAG_MINUTES",
        ] {
            if get(dependent).is_some() {
                return Err(ConfigError::new(
                    "AUDIT_FORWARD_URL",
                    "must be set when another AUDIT_FORWARD_ setting is",
                ));
            }
        }
        return Ok(None);
    };
    let url = Url::parse(raw).map_err(|_| {
        ConfigError::new(
            "AUDIT_FORWARD_URL",
            "must be a URL: syslog+tls://host[:port], https://host/path",
        )
    })?;
    let protocol = forward_protocol(&url)?;
    let authorization = parse_secret(get("AUDIT_FORWARD_AUTHORIZATION"));
    if authorization.is_some() && protocol != ForwardProtocol::Http {
        return Err(ConfigError::new(
            "AUDIT_FORWARD_AUTHORIZATION",
            "is sent only to an https:// sink",
        ));
    }
    let max_lag = match get("AUDIT_FORWARD_MAX_LAG_MINUTES") {
        None => None,
        Some(value) => Some(Duration::from_secs(
            60 * parse_usize("AUDIT_FORWARD_MAX_LAG_MINUTES", Some(value), 1, 1..=1440)? as u64,
        )),
    };
    Ok(Some(AuditForwardSettings {
        url,
        protocol,
        ca_file: get("AUDIT_FORWARD_CA_FILE")
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        authorization,
        max_lag,
    }))
}

/// The sink's protocol; a URL with credentials, a query or fragment (for
/// syslog), or a plain-text sink off loopback is refused.
fn forward_protocol(url: &Url) -> Result<ForwardProtocol, ConfigError> {
    let refuse = |rule: &str| Err(ConfigError::new("AUDIT_FORWARD_URL", rule));
    if !url.username().is_empty() || url.password().is_some() {
        return refuse(
            "must not carry credentials (use AUDIT_FORWARD_AUTHORIZATION for an https:// sink)",
        );
    }
    if url.host().is_none() {
        return refuse("must name a host");
    }
    let protocol = match url.scheme() {
        "syslog+tls" => ForwardProtocol::SyslogTls,
        "syslog+tcp" => ForwardProtocol::SyslogTcp,
        "https" | "http" => ForwardProtocol::Http,
        _ => {
            return refuse(
                "must be syslog+tls://, https:// (or, to loopback only, syslog+tcp:// or http://)",
            );
        }
    };
    let plain = matches!(url.scheme(), "syslog+tcp" | "http");
    if plain && !is_loopback_host(url) {
        return refuse(
            "may use syslog+tcp:// or http:// only to a loopback address: entries leave the host over TLS",
        );
    }
    if protocol != ForwardProtocol::Http
        && (url.query().is_some() || url.fragment().is_some() || !matches!(url.path(), "" | "/"))
    {
        return refuse("a syslog URL is host and port only");
    }
    Ok(protocol)
}

/// Whether the URL's host is a loopback address. A `syslog+…` URL's host
/// is opaque to the URL parser (not a special scheme), so an IP literal
/// is parsed here.
fn is_loopback_host(url: &Url) -> bool {
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']');
    is_loopback_url(url)
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<Option<AuditForwardSettings>, ConfigError> {
        audit_forward(&|name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v))
    }

    #[test]
    fn unset_means_no_forwarding() {
        assert!(parse(&[]).unwrap().is_none());
    }

    #[test]
    fn the_sink_kind_comes_from_the_scheme() {
        let kind = |url| {
            parse(&[("AUDIT_FORWARD_URL", url)])
                .unwrap()
                .unwrap()
                .protocol
        };
        assert_eq!(
            kind("syslog+tls://logs.example.org"),
            ForwardProtocol::SyslogTls
        );
        assert_eq!(
            kind("syslog+tcp://127.0.0.1:514"),
            ForwardProtocol::SyslogTcp
        );
        assert_eq!(
            kind("https://siem.example.org/ingest"),
            ForwardProtocol::Http
        );
        assert_eq!(kind("http://localhost:8686/"), ForwardProtocol::Http);
    }

    #[test]
    fn plain_text_leaves_the_host_never() {
        for url in ["syslog+tcp://logs.example.org", "http://siem.example.org/"] {
            let err = parse(&[("AUDIT_FORWARD_URL", url)]).unwrap_err();
            assert_eq!(err.setting, "AUDIT_FORWARD_URL");
            assert!(err.rule.contains("loopback"), "{err}");
        }
    }

    #[test]
    fn credentials_in_the_url_other_schemes_and_paths_on_syslog_are_refused() {
        for url in [
            "https://user:pw@siem.example.org/",
            "udp://logs.example.org",
            "syslog+tls://logs.example.org/path",
            "not a url",
        ] {
            assert!(parse(&[("AUDIT_FORWARD_URL", url)]).is_err(), "{url}");
        }
    }

    #[test]
    fn dependent_settings_need_the_url_and_the_right_sink() {
        assert!(parse(&[("AUDIT_FORWARD_MAX_LAG_MINUTES", "5")]).is_err());
        let err = parse(&[
            ("AUDIT_FORWARD_URL", "syslog+tls://logs.example.org"),
            ("AUDIT_FORWARD_AUTHORIZATION", "Splunk abc"),
        ])
        .unwrap_err();
        assert_eq!(err.setting, "AUDIT_FORWARD_AUTHORIZATION");
    }

    #[test]
    fn the_lag_bound_is_in_minutes_within_a_day() {
        let lag = |value| {
            parse(&[
                ("AUDIT_FORWARD_URL", "https://siem.example.org/"),
                ("AUDIT_FORWARD_MAX_LAG_MINUTES", value),
            ])
        };
        assert_eq!(
            lag("5").unwrap().unwrap().max_lag,
            Some(Duration::from_secs(300))
        );
        assert!(lag("0").is_err());
        assert!(lag("1441").is_err());
    }
}
