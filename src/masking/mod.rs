//! Pattern masking (`SECRET_DETECTION_MODE`): credentials nobody told the
//! gateway about, recognised by their shape. Heuristic by nature: exact
//! redaction (`redaction.rs`) is the guarantee, this is the safety net.
//!
//! Each family is one regex plus an acceptance check on the matched value,
//! and a few literal anchors of which every match contains one. A single
//! Aho-Corasick pass over all anchors decides which families can match a
//! string at all; only those regexes run. Most strings of a result (titles,
//! URLs, dates) contain no anchor and cost one short linear scan. Only
//! ASCII word boundaries (`(?-u:\b)`) are used, which keeps the regex
//! engine on its fast DFA path for any input.
//!
//! A bare 40-hex (SHA-1) or 64-hex (SHA-256) commit id is never a match:
//! no family matches hex on its own. Hex becomes a credential only when
//! the text introduces it as one (`token <40 hex>`, Gitea's Authorization
//! scheme, or a `token=`/`secret:` style assignment).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine;
use regex::Regex;
use serde_json::Value;

pub mod walk;

use walk::{any_base64_field, any_string, rewrite_base64_fields, rewrite_strings};

/// What replaces the hidden part of a masked secret.
pub const MASKED: &str = "[MASKED]";

/// A match at least this long keeps its first and last [`KEEP_CHARS`]
/// characters (waiver W-09); a shorter one is replaced whole.
pub const MIN_CHARS_TO_KEEP_ENDS: usize = 16;
pub const KEEP_CHARS: usize = 4;

/// One family of secret shapes.
struct FamilySpec {
    name: &'static str,
    pattern: &'static str,
    /// The capture group holding the secret; 0 is the whole match. Context
    /// around it (`token `, `password=`) stays readable.
    group: usize,
    accept: fn(&str) -> bool,
    /// Every match contains one of these (ASCII case-insensitive); a
    /// string without any of them is not searched with `pattern`.
    anchors: &'static [&'static str],
    /// Every match also contains all of these.
    requires: &'static [&'static str],
}

const FAMILIES: &[FamilySpec] = &[
    FamilySpec {
        name: "github_token",
        pattern: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})(?-u:\b)",
        group: 0,
        accept: always,
        anchors: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        requires: &[],
    },
    FamilySpec {
        name: "gitlab_token",
        pattern: r"(?-u:\b)(?:(?:glpat|gldt|glrt|glptt|glcbt|glft|glimt|glsoat|gloas|glffct|glagent)-[A-Za-z0-9_\-]{20,}|GR1348941[A-Za-z0-9_\-]{20,})",
        group: 0,
        accept: always,
        anchors: &[
            "glpat-",
            "gldt-",
            "glrt-",
            "glptt-",
            "glcbt-",
            "glft-",
            "glimt-",
            "glsoat-",
            "gloas-",
            "glffct-",
            "glagent-",
            "GR1348941",
        ],
        requires: &[],
    },
    FamilySpec {
        // Gitea tokens are 40 hex characters without a prefix, so only
        // Gitea's Authorization scheme (`token <hex>`) tells them apart
        // from a commit id.
        name: "gitea_token",
        pattern: r"(?i)(?-u:\b)token[ \t]+([0-9a-f]{40})(?-u:\b)",
        group: 1,
        accept: always,
        anchors: &["token"],
        requires: &[],
    },
    FamilySpec {
        // Gitea's OAuth2 client secrets: `gto_` + 52 lowercase base32.
        name: "gitea_oauth_client_secret",
        pattern: r"(?-u:\b)gto_[a-z2-7]{40,}(?-u:\b)",
        group: 0,
        accept: always,
        anchors: &["gto_"],
        requires: &[],
    },
    FamilySpec {
        name: "aws_access_key_id",
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?-u:\b)",
        group: 0,
        accept: always,
        anchors: &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
        requires: &[],
    },
    FamilySpec {
        name: "slack_token",
        pattern: r"(?-u:\b)(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})|https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}",
        group: 0,
        accept: always,
        anchors: &["xox", "xapp-", "hooks.slack.com"],
        requires: &[],
    },
    FamilySpec {
        name: "stripe_key",
        pattern: r"(?-u:\b)(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,})",
        group: 0,
        accept: always,
        anchors: &["sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"],
        requires: &[],
    },
    FamilySpec {
        name: "google_credential",
        pattern: r"(?-u:\b)(?:AIza[0-9A-Za-z_\-]{35}|GOCSPX-[A-Za-z0-9_\-]{28}|ya29\.[0-9A-Za-z_\-]{20,})",
        group: 0,
        accept: always,
        anchors: &["AIza", "GOCSPX-", "ya29."],
        requires: &[],
    },
    FamilySpec {
        name: "anthropic_key",
        pattern: r"(?-u:\b)sk-ant-(?:api|admin|sid|oat|ort)[0-9]{2}-[A-Za-z0-9_\-]{20,}",
        group: 0,
        accept: always,
        anchors: &["sk-ant-"],
        requires: &[],
    },
    FamilySpec {
        name: "openai_key",
        pattern: r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{32,})",
        group: 0,
        accept: always,
        anchors: &["sk-"],
        requires: &[],
    },
    FamilySpec {
        name: "aegis_token",
        pattern: r"(?-u:\b)agm_[A-Za-z0-9_\-]{20,}",
        group: 0,
        accept: always,
        anchors: &["agm_"],
        requires: &[],
    },
    FamilySpec {
        name: "jwt",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
        group: 0,
        accept: always,
        anchors: &["eyJ"],
        requires: &[],
    },
    FamilySpec {
        // The whole block when its END line is there; otherwise the header
        // and whatever base64 follows it (a cut-off key is still a key).
        name: "private_key",
        pattern: r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,\\]*)",
        group: 0,
        accept: always,
        anchors: &["-----BEGIN"],
        requires: &[],
    },
    FamilySpec {
        name: "bearer_token",
        pattern: r"(?i)(?-u:\b)bearer[ \t]+([A-Za-z0-9\-._~+/]{16,}=*)",
        group: 1,
        // Prose ("bearer authentication_scheme") has no digits; tokens do.
        accept: has_digit,
        anchors: &["bearer"],
        requires: &[],
    },
    FamilySpec {
        name: "basic_auth",
        pattern: r"(?i)(?-u:\b)basic[ \t]+([A-Za-z0-9+/]{8,}={0,2})",
        group: 1,
        accept: is_basic_credentials,
        anchors: &["basic"],
        requires: &[],
    },
    FamilySpec {
        name: "url_credentials",
        // The user name is not bounded: `{1,128}` masked nothing after a
        // longer one, and its 128 copies of a Unicode class made the regex
        // many times larger in memory for the life of the process.
        pattern: r#"(?i)(?-u:\b)[a-z][a-z0-9+.\-]{1,15}://[^\s/:@"'<>]+:([^\s/@"'<>]{3,})@"#,
        group: 1,
        accept: not_placeholder,
        anchors: &["://"],
        requires: &["@"],
    },
    FamilySpec {
        name: "secret_assignment",
        pattern: r#"(?i)(?:api[_\-]?key|apikey|access[_\-]?key|secret|token|passw(?:or)?d|passphrase|private[_\-]?key|credentials?)[A-Za-z0-9_.\-]{0,32}["']?[ \t]{0,8}(?::=|=>|:|=)[ \t]{0,8}["']?([^\s"'`,;&<>()\[\]{}\\]{8,})"#,
        group: 1,
        accept: is_plausible_assigned_secret,
        anchors: &[
            "apikey",
            "api_key",
            "api-key",
            "accesskey",
            "access_key",
            "access-key",
            "secret",
            "token",
            "passwd",
            "password",
            "passphrase",
            "privatekey",
            "private_key",
            "private-key",
            "credential",
        ],
        requires: &[],
    },
];

// One bit per family in `Masker::possible_families`.
const _: () = assert!(FAMILIES.len() <= 32);

fn always(_: &str) -> bool {
    true
}

fn has_digit(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_digit())
}

/// `Basic` is only a credential when it decodes to `user:password`.
fn is_basic_credentials(value: &str) -> bool {
    base64::engine::general_purpose::STANDARD
        .decode(value)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .is_some_and(|s| s.contains(':'))
}

/// Values that document a secret rather than being one.
const PLACEHOLDER_MARKERS: &[&str] = &[
    "example",
    "placeholder",
    "changeme",
    "redacted",
    "masked",
    "dummy",
    "sample",
    "xxxx",
    "****",
    "...",
    "your_",
    "your-",
    "${",
    "{{",
];

fn not_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let first = value.chars().next();
    !value.starts_with(['$', '%', '*', '<'])
        && !PLACEHOLDER_MARKERS.iter().any(|m| lower.contains(m))
        && !value.chars().all(|c| Some(c) == first)
}

/// `password: hunter2hunter2` yes; `token_type: required_field` and
/// `password: ${{ secrets.PASS }}` no. Short values need a digit, which
/// identifiers and prose seldom have.
fn is_plausible_assigned_secret(value: &str) -> bool {
    not_placeholder(value) && (has_digit(value) || value.len() >= 20)
}

/// One recognised secret in a text: its family and byte span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    pub family: &'static str,
    pub start: usize,
    pub end: usize,
}

/// The compiled families.
pub struct Masker {
    /// All anchors of all families; pattern `i` belongs to `anchor_family[i]`.
    anchors: AhoCorasick,
    anchor_family: Vec<usize>,
    regexes: Vec<Regex>,
}

impl std::fmt::Debug for Masker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Masker")
            .field("families", &self.regexes.len())
            .finish()
    }
}

static MASKER: LazyLock<Masker> = LazyLock::new(|| {
    let (anchor_family, literals): (Vec<usize>, Vec<&str>) = FAMILIES
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.anchors.iter().map(move |a| (i, *a)))
        .unzip();
    Masker {
        anchors: AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(literals)
            .expect("the anchors build"),
        anchor_family,
        regexes: FAMILIES
            .iter()
            .map(|f| Regex::new(f.pattern).expect("a secret pattern compiles"))
            .collect(),
    }
});

/// The process-wide masker (compiled once).
pub fn masker() -> &'static Masker {
    &MASKER
}

/// The names of every family, for the tests.
#[cfg(test)]
pub fn family_names() -> impl Iterator<Item = &'static str> {
    FAMILIES.iter().map(|f| f.name)
}

impl Masker {
    /// Non-overlapping findings in `text`, in order. Where two families
    /// overlap, the earlier (then the longer) wins.
    pub fn findings(&self, text: &str) -> Vec<Finding> {
        let possible = self.possible_families(text);
        if possible == 0 {
            return Vec::new();
        }
        let mut found = Vec::new();
        for (index, spec) in FAMILIES.iter().enumerate() {
            if possible & (1 << index) == 0 || !spec.requires.iter().all(|r| text.contains(r)) {
                continue;
            }
            for caps in self.regexes[index].captures_iter(text) {
                let Some(m) = caps.get(spec.group) else {
                    continue;
                };
                if !m.is_empty() && (spec.accept)(m.as_str()) {
                    found.push(Finding {
                        family: spec.name,
                        start: m.start(),
                        end: m.end(),
                    });
                }
            }
        }
        found.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end)));
        let mut kept: Vec<Finding> = Vec::with_capacity(found.len());
        for f in found {
            if kept.last().is_none_or(|last| f.start >= last.end) {
                kept.push(f);
            }
        }
        kept
    }

    /// A bit per family that may match `text`: one of its anchors occurs.
    fn possible_families(&self, text: &str) -> u32 {
        // Most strings hold no anchor. A plain search proves that with the
        // automaton's SIMD prefilter; the overlapping search that names
        // every family present runs only after a hit.
        if self.anchors.find(text).is_none() {
            return 0;
        }
        let all = (1u32 << FAMILIES.len()) - 1;
        let mut possible = 0u32;
        for m in self.anchors.find_overlapping_iter(text) {
            possible |= 1 << self.anchor_family[m.pattern().as_usize()];
            if possible == all {
                break;
            }
        }
        possible
    }

    /// `Some(masked)` when `text` holds a secret shape.
    pub fn mask_if_found(&self, text: &str) -> Option<String> {
        let findings = self.findings(text);
        if findings.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in findings {
            out.push_str(&text[at..f.start]);
            out.push_str(&mask_secret(&text[f.start..f.end]));
            at = f.end;
        }
        out.push_str(&text[at..]);
        Some(out)
    }

    pub fn mask_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.mask_if_found(text) {
            Some(out) => Cow::Owned(out),
            None => Cow::Borrowed(text),
        }
    }

    /// Masks in place: string values, object keys, and base64 file fields
    /// that decode to UTF-8 text (binary content is left to exact
    /// redaction: shapes found in arbitrary bytes would be noise).
    pub fn mask_value(&self, value: &mut Value) {
        rewrite_base64_fields(value, &mut |bytes| {
            let text = std::str::from_utf8(bytes).ok()?;
            self.mask_if_found(text).map(String::into_bytes)
        });
        rewrite_strings(value, &mut |s| self.mask_if_found(s));
    }

    /// The families found anywhere in `value` (block mode names them; the
    /// values themselves are never repeated).
    pub fn families_in_value(&self, value: &Value) -> BTreeSet<&'static str> {
        let mut families = BTreeSet::new();
        let mut note = |text: &str| {
            families.extend(self.findings(text).into_iter().map(|f| f.family));
            false
        };
        any_string(value, &mut note);
        any_base64_field(value, &mut |bytes| {
            std::str::from_utf8(bytes).is_ok_and(&mut note)
        });
        families
    }
}

/// The masked form of one secret: first and last [`KEEP_CHARS`] characters
/// around [`MASKED`] when it has at least [`MIN_CHARS_TO_KEEP_ENDS`]
/// characters, otherwise [`MASKED`] alone.
pub fn mask_secret(secret: &str) -> String {
    let count = secret.chars().count();
    if count < MIN_CHARS_TO_KEEP_ENDS {
        return MASKED.to_owned();
    }
    let head: String = secret.chars().take(KEEP_CHARS).collect();
    let tail: String = secret.chars().skip(count - KEEP_CHARS).collect();
    format!("{head}{MASKED}{tail}")
}

#[cfg(test)]
mod tests;
