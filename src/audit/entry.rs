//! One audit entry and its canonical serialization, which the chain covers.
//!
//! A line of `audit.log` is one JSON object, in this fixed field order:
//!
//! ```text
//! {"v":1,"seq":N,"ts":"…","event":"…","identity":{…},"tool":"…","method":"…",
//!  "route":"…","args":[…],"outcome":"…","status":N,"duration_ms":N,
//!  "error_kind":"…","detail":{…},"chain":"<64 hex>"}
//! ```
//!
//! Absent optional fields are omitted (never `null`); `detail` keys are
//! sorted. The **canonical entry** is the line without its trailing
//! `,"chain":"…"` member (and without the newline): exactly the bytes
//! `serde_json` produces for [`EntryBody`]. The chain covers those bytes, so
//! any edit of a line, even of whitespace, breaks it. See `chain.rs`.
//!
//! What an entry never holds: argument values, request or response bodies,
//! Gitea's messages, tokens. `args` holds argument *names*; every string is
//! masked once more with the project's secret pattern masker before writing.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::identity::Identity;

/// The format version written in every entry (`"v"`).
pub const FORMAT_VERSION: u32 = 1;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The gateway opened the log (every start).
    LogOpened,
    /// First entry of a new file after size-based rotation.
    LogRotated,
    /// The log became writable again after a failure, or was recreated
    /// after the file went missing.
    LogReopened,
    /// Written after a torn last line (a crash mid-write) was found.
    LogRecovered,
    /// Write-ahead entry: written (and fsynced) before the call goes upstream.
    ToolCallStarted,
    /// Exactly one per started call.
    ToolCallFinished,
    /// A call refused before anything was written for it or sent: an
    /// unknown tool, or arguments that do not fit the schema. One entry.
    ToolCallRefused,
    ClientRegistered,
    ConsentApproved,
    ConsentDenied,
    CodeIssued,
    CodeReplayed,
    TokenIssued,
    TokenRefreshed,
    RefreshReuseDetected,
    TokenRevoked,
    UpstreamRefreshFailed,
    UpstreamRefreshed,
    AdminAction,
    RateLimited,
    /// A grant ended: revoked by its client, its person, an admin, or the
    /// gateway (reuse, replay, Gitea's refusal). One entry per grant.
    GrantEnded,
    /// A call waits for its person's confirmation (`docs/confirmation.md`).
    ConfirmationRequested,
    /// The person approved it (`detail.by`).
    ConfirmationApproved,
    /// The person denied it.
    ConfirmationDenied,
    /// Nobody decided, or the approved call was not retried, in time.
    ConfirmationExpired,
    /// A sign-in refused because its login connected too many new clients
    /// within the hour (the red team's F1, issue 53).
    RegistrationLimited,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LogOpened => "log_opened",
            Self::LogRotated => "log_rotated",
            Self::LogReopened => "log_reopened",
            Self::LogRecovered => "log_recovered",
            Self::ToolCallStarted => "tool_call_started",
            Self::ToolCallFinished => "tool_call_finished",
            Self::ToolCallRefused => "tool_call_refused",
            Self::ClientRegistered => "client_registered",
            Self::ConsentApproved => "consent_approved",
            Self::ConsentDenied => "consent_denied",
            Self::CodeIssued => "code_issued",
            Self::CodeReplayed => "code_replayed",
            Self::TokenIssued => "token_issued",
            Self::TokenRefreshed => "token_refreshed",
            Self::RefreshReuseDetected => "refresh_reuse_detected",
            Self::TokenRevoked => "token_revoked",
            Self::UpstreamRefreshFailed => "upstream_refresh_failed",
            Self::UpstreamRefreshed => "upstream_refreshed",
            Self::AdminAction => "admin_action",
            Self::RateLimited => "rate_limited",
            Self::GrantEnded => "grant_ended",
            Self::ConfirmationRequested => "confirmation_requested",
            Self::ConfirmationApproved => "confirmation_approved",
            Self::ConfirmationDenied => "confirmation_denied",
            Self::ConfirmationExpired => "confirmation_expired",
            Self::RegistrationLimited => "registration_limited",
        }
    }
}

/// Who acted: login and authentication mode. Never a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditIdentity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub login: Option<String>,
    pub mode: String,
}

impl From<&Identity> for AuditIdentity {
    fn from(identity: &Identity) -> Self {
        Self {
            login: identity.login.clone(),
            mode: identity.mode.as_str().to_owned(),
        }
    }
}

/// How a call or action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Error,
}

/// What a caller records: everything but sequence number, time and chain,
/// which the writer assigns in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub event: EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<AuditIdentity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A route template (`/repos/{owner}/{repo}/issues`), never a filled path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// Argument names, never values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// Identifiers and coarse reasons (client id, action name, key kind…).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub detail: BTreeMap<String, String>,
}

impl Event {
    pub fn new(event: EventKind) -> Self {
        Self {
            event,
            identity: None,
            tool: None,
            method: None,
            route: None,
            args: None,
            outcome: None,
            status: None,
            duration_ms: None,
            error_kind: None,
            detail: BTreeMap::new(),
        }
    }

    pub fn identity(mut self, identity: impl Into<AuditIdentity>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// A login with mode `oauth` (the OAuth server's events).
    pub fn oauth_login(mut self, login: &str) -> Self {
        self.identity = Some(AuditIdentity {
            login: Some(login.to_owned()),
            mode: "oauth".to_owned(),
        });
        self
    }

    pub fn tool(mut self, name: &str) -> Self {
        self.tool = Some(name.to_owned());
        self
    }

    pub fn outcome(mut self, outcome: Outcome) -> Self {
        self.outcome = Some(outcome);
        self
    }

    pub fn detail(mut self, key: &str, value: impl ToString) -> Self {
        self.detail.insert(key.to_owned(), value.to_string());
        self
    }

    /// Masks every string once more with the secret pattern masker, and
    /// bounds the length of free strings (a tool name comes from the caller).
    pub fn masked(mut self) -> Self {
        let masker = crate::masking::masker();
        let clean = |s: &mut String| {
            if s.chars().count() > MAX_FIELD_CHARS {
                *s = s.chars().take(MAX_FIELD_CHARS).collect();
            }
            if let Some(masked) = masker.mask_if_found(s) {
                *s = masked;
            }
        };
        if let Some(identity) = &mut self.identity {
            identity.login.iter_mut().for_each(clean);
            clean(&mut identity.mode);
        }
        for field in [
            &mut self.tool,
            &mut self.method,
            &mut self.route,
            &mut self.error_kind,
        ] {
            field.iter_mut().for_each(clean);
        }
        self.args.iter_mut().flatten().for_each(clean);
        self.detail.values_mut().for_each(clean);
        // Keys are copied only when one needs masking (none, nearly always).
        let masked_keys: Vec<(String, String)> = self
            .detail
            .keys()
            .filter_map(|key| {
                masker
                    .mask_if_found(key)
                    .map(|masked| (key.clone(), masked))
            })
            .collect();
        for (key, masked) in masked_keys {
            let value = self.detail.remove(&key).unwrap_or_default();
            self.detail.insert(masked, value);
        }
        self
    }
}

/// Longest string kept in an entry field.
pub const MAX_FIELD_CHARS: usize = 256;

/// The canonical entry: what the chain covers (everything but `chain`).
#[derive(Debug, Serialize)]
pub struct EntryBody<'a> {
    pub v: u32,
    pub seq: u64,
    pub ts: &'a str,
    /// The process that wrote the entry (`REPLICA_ID`), so the logs of N
    /// replicas stay apart once shipped to one place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replica: Option<&'a str>,
    #[serde(flatten)]
    pub event: &'a Event,
}

impl EntryBody<'_> {
    /// The canonical JSON as its own string (tests and fuzz targets).
    #[cfg(any(test, fuzzing))]
    pub fn canonical(&self) -> String {
        serde_json::to_string(self).expect("an audit entry always serializes")
    }

    /// Appends the canonical JSON (no newline, no chain) to `out`, for the
    /// writer to build a group of lines in one buffer.
    pub fn write_canonical(&self, out: &mut Vec<u8>) {
        serde_json::to_writer(out, self).expect("an audit entry always serializes")
    }
}

/// The key of the chain member, as it appears at the end of every line.
pub const CHAIN_MEMBER: &str = ",\"chain\":\"";

/// The full line (with newline) from a canonical entry and its chain value.
#[cfg(any(test, fuzzing))]
pub fn line(canonical: &str, chain: &str) -> String {
    let mut line = canonical.as_bytes().to_vec();
    close_line(&mut line, chain);
    String::from_utf8(line).expect("a canonical entry and a chain value are UTF-8")
}

/// Makes the canonical entry at the end of `out` a full line: its closing
/// brace becomes the chain member, the brace and the newline.
pub fn close_line(out: &mut Vec<u8>, chain: &str) {
    assert_eq!(out.pop(), Some(b'}'), "a canonical entry is a JSON object");
    out.extend_from_slice(CHAIN_MEMBER.as_bytes());
    out.extend_from_slice(chain.as_bytes());
    out.extend_from_slice(b"\"}\n");
}

/// Splits a line (without newline) into its canonical entry and chain
/// value; `None` when the line does not end with a well-formed chain member.
pub fn split_line(line: &str) -> Option<(String, &str)> {
    let body = line.strip_suffix("\"}")?;
    let at = body.rfind(CHAIN_MEMBER)?;
    let chain = &body[at + CHAIN_MEMBER.len()..];
    if chain.len() != 64 || !chain.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((format!("{}}}", &body[..at]), chain))
}

/// The current time, RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now())
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_form_has_a_fixed_order_and_omits_absent_fields() {
        let mut event = Event::new(EventKind::ToolCallStarted).tool("gitea_issue_list_issues");
        event.args = Some(vec!["owner".into(), "repo".into()]);
        event.identity = Some(AuditIdentity {
            login: Some("alice".into()),
            mode: "bearer".into(),
        });
        let body = EntryBody {
            v: 1,
            seq: 7,
            ts: "2026-01-01T00:00:00.000Z",
            replica: None,
            event: &event,
        };
        assert_eq!(
            body.canonical(),
            r#"{"v":1,"seq":7,"ts":"2026-01-01T00:00:00.000Z","event":"tool_call_started","identity":{"login":"alice","mode":"bearer"},"tool":"gitea_issue_list_issues","args":["owner","repo"]}"#
        );
    }

    #[test]
    fn a_line_splits_back_into_its_canonical_entry_and_chain() {
        let canonical = r#"{"v":1,"seq":1}"#;
        let chain = "ab".repeat(32);
        let full = line(canonical, &chain);
        let (back, c) = split_line(full.trim_end()).unwrap();
        assert_eq!(back, canonical);
        assert_eq!(c, chain);
        assert!(split_line(&full[..full.len() - 5]).is_none());
    }

    #[test]
    fn lines_written_into_one_buffer_are_the_lines_made_one_by_one() {
        let events = [
            Event::new(EventKind::ToolCallStarted).tool("gitea_user_get_current"),
            Event::new(EventKind::ToolCallFinished).detail("started_seq", "1"),
        ];
        let (mut buf, mut expected) = (b"\n".to_vec(), "\n".to_owned());
        for (seq, event) in (1..).zip(&events) {
            let body = EntryBody {
                v: 1,
                seq,
                ts: "2026-01-01T00:00:00.000Z",
                replica: Some("r1"),
                event,
            };
            let chain = format!("{seq:064x}");
            body.write_canonical(&mut buf);
            close_line(&mut buf, &chain);
            expected.push_str(&line(&body.canonical(), &chain));
        }
        assert_eq!(String::from_utf8(buf).unwrap(), expected);
    }

    #[test]
    fn a_line_is_the_canonical_entry_with_the_chain_member_last() {
        let chain = "ab".repeat(32);
        assert_eq!(
            line(r#"{"v":1,"seq":1}"#, &chain),
            format!("{{\"v\":1,\"seq\":1,\"chain\":\"{chain}\"}}\n")
        );
    }

    #[test]
    fn strings_are_masked_once_more() {
        let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0".repeat(2));
        let event = Event::new(EventKind::AdminAction)
            .detail("target", &token)
            .masked();
        assert!(!event.detail["target"].contains(&token));
    }

    #[test]
    fn a_detail_key_holding_a_credential_is_masked_and_keeps_its_value() {
        let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0".repeat(2));
        let event = Event::new(EventKind::AdminAction)
            .detail(&token, "kept")
            .detail("plain", "also kept")
            .masked();
        assert!(event.detail.keys().all(|key| !key.contains(&token)));
        assert_eq!(event.detail.len(), 2);
        assert!(event.detail.values().any(|value| value == "kept"));
        assert_eq!(event.detail["plain"], "also kept");
    }
}
