//! The result pipeline of one tool call, in the order that makes its
//! promises hold (ADR 0005 "Amendments", `docs/result-hygiene.md`):
//!
//! 1. decode (envelope: JSON deeper than 100 levels stays text, binaries
//!    become base64 up to `MAX_BINARY_BYTES`, UTF-8 text stays text; in
//!    the compact view a base64 file `content` that is UTF-8 text is
//!    decoded, `text_files`);
//! 2. exact redaction of every known secret (always);
//! 3. webhook `authorization_header` redaction (always);
//! 4. pattern masking per `SECRET_DETECTION_MODE`, skipped on the success
//!    of a credential-issuing operation;
//! 5. hidden characters made visible (`crate::hidden_text`), on every
//!    string of every view, and counted in the envelope;
//! 6. the compact view (`catalog::projection`), unless the call asked for
//!    `view: full`;
//! 7. bounds: items, then characters, as the envelope's text is written.
//!
//! A JSON list or object runs all steps in one streamed pass over Gitea's
//! bytes (`transcode`), the envelope's other fields a typed value
//! (`gitea::envelope_shell`) whose caller strings get steps 2 and 4;
//! everything else, and what the streamed pass declines (base64 file
//! fields, keys the passes change, webhook headers, block-mode findings),
//! runs steps 1 to 4 on a `serde_json::Value` tree and then the same
//! streamed pass for steps 5 to 7. Both write the same text.
//!
//! Redaction and masking run before any cut, so a bound can only split a
//! marker, never a secret. Errors from Gitea get exact redaction, masking
//! and truncation in the same order. Pure: no I/O.
//!
//! The passes are the children of this module, `redaction` (steps 2 and
//! 3) and `bounds` (step 7), with `secrets` (which values of a call are
//! secrets, which operations get special treatment); and the leaf module
//! `crate::masking` (step 4, and the walk over a document's text that
//! redaction and masking share; the audit log masks with it too).
//! Decoding (step 1) is the envelope's, in `gitea::envelope`.

pub mod bounds;
pub mod redaction;
pub mod redactor_cache;
pub mod secrets;
pub mod text_passes;
pub mod transcode;

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

use self::bounds::{Bounds, DataText, bounded_envelope};
use self::redaction::{Redactor, redact_authorization_headers};
use self::secrets::is_credential_issuing;
use self::transcode::{Masking, Projection, TextPasses, transcode};
use super::call::GiteaCall;
use super::envelope::{clean_message, decode_body, gitea_message, json_text, truncate_message};
use super::envelope_shell::EnvelopeShell;
use super::error::{ErrorKind, ToolError};
use super::executor::UpstreamResponse;
use super::text_files::decode_text_files;
use crate::catalog::{Node, Shapes};
use crate::config::{Limits, SecretDetectionMode};
use crate::hidden_text::reveal_cow;
use crate::identity::Identity;
use crate::masking::masker;

/// The settings the pipeline follows, the same for every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultPolicy {
    pub mode: SecretDetectionMode,
    pub bounds: Bounds,
    pub max_binary_bytes: usize,
}

impl ResultPolicy {
    pub fn new(limits: &Limits, mode: SecretDetectionMode) -> Self {
        Self {
            mode,
            bounds: Bounds {
                max_items: limits.max_tool_response_items,
                max_chars: limits.max_tool_response_chars,
            },
            max_binary_bytes: limits.max_binary_bytes,
        }
    }
}

/// Which view of Gitea's answer a call gets (`docs/tools.md`, "Views").
#[derive(Debug, Clone, Copy)]
pub enum ResultView<'a> {
    /// Gitea's body as it is (after redaction, masking and hidden
    /// characters): the raw tool, `view: full`, and operations with no
    /// response shape.
    Full,
    /// Projected by the operation's response shape.
    Compact { shapes: &'a Shapes, root: &'a Node },
}

impl ResultView<'_> {
    fn projection(&self) -> Option<Projection<'_>> {
        match *self {
            Self::Full => None,
            Self::Compact { shapes, root } => Some(Projection { shapes, root }),
        }
    }
}

/// Gitea's answer as the success envelope's JSON text, or a sanitized
/// error. `operation_id` is the catalog operation (None for the raw tool).
///
/// JSON lists and objects take the streamed path (`transcode`); what it
/// declines, and every other body, takes the tree path. Both write the
/// same text for what both accept.
pub fn tool_result(
    identity: &Identity,
    call: &GiteaCall,
    response: &UpstreamResponse,
    policy: &ResultPolicy,
    redactor: &Redactor,
    operation_id: Option<&str>,
    view: ResultView<'_>,
) -> Result<String, ToolError> {
    if !(200..300).contains(&response.status) {
        return Err(gitea_error(response, redactor, policy.mode));
    }
    let made = ResultMaking {
        identity,
        call,
        response,
        policy,
        redactor,
        mode: effective_mode(policy.mode, operation_id),
        view,
    };
    made.streamed().unwrap_or_else(|| made.tree())
}

/// The mode a result is cleaned in: the success of a credential-issuing
/// operation skips masking and block (its point is the credential), never
/// exact redaction.
fn effective_mode(mode: SecretDetectionMode, operation_id: Option<&str>) -> SecretDetectionMode {
    if is_credential_issuing(operation_id) {
        SecretDetectionMode::Off
    } else {
        mode
    }
}

/// A 2xx answer and what its result is made with, for either path.
struct ResultMaking<'a> {
    identity: &'a Identity,
    call: &'a GiteaCall,
    response: &'a UpstreamResponse,
    policy: &'a ResultPolicy,
    redactor: &'a Redactor,
    mode: SecretDetectionMode,
    view: ResultView<'a>,
}

impl ResultMaking<'_> {
    /// The streamed path, or `None` when the body is not a JSON list or
    /// object it can rewrite (one nested too deep among them: the
    /// transcoder counts the depth as it reads).
    fn streamed(&self) -> Option<Result<String, ToolError>> {
        let body = json_text(self.response)?;
        let passes = self.text_passes();
        let projection = self.view.projection();
        let data = transcode(
            body,
            &passes,
            projection.as_ref(),
            self.policy.bounds.max_items,
        )
        .ok()?;
        Some(self.envelope(
            DataText::Json(data.json),
            data.omitted_items,
            data.hidden_chars,
        ))
    }

    /// The tree path: the body decoded to a `serde_json::Value`, cleaned
    /// with the envelope, then written by the streamed pass (view, hidden
    /// characters, item bound) and bounded as the envelope is written.
    fn tree(&self) -> Result<String, ToolError> {
        let mut data = decode_body(self.response, self.policy.max_binary_bytes)?;
        if matches!(self.view, ResultView::Compact { .. }) {
            decode_text_files(&mut data);
        }
        let mut envelope = Value::Object(Map::from_iter([("data".to_owned(), data)]));
        self.clean(&mut envelope)?;
        let data = match envelope {
            Value::Object(mut map) => map.shift_remove("data").unwrap_or(Value::Null),
            _ => unreachable!("the envelope is an object"),
        };
        match data {
            Value::Array(_) | Value::Object(_) => {
                let text = data.to_string();
                let projection = self.view.projection();
                let written = transcode(
                    text.as_bytes(),
                    &TextPasses::cleaned(),
                    projection.as_ref(),
                    self.policy.bounds.max_items,
                )
                // The tree came from a body of at most `MAX_JSON_DEPTH`
                // levels (`decode_body`), and cleaning only swaps strings:
                // the pass declines nothing it holds.
                .expect("a serialized tree transcodes");
                self.envelope(
                    DataText::Json(written.json),
                    written.omitted_items,
                    written.hidden_chars,
                )
            }
            Value::String(text) => {
                let (shown, hidden) = reveal_cow(Cow::Owned(text));
                self.envelope(DataText::Text(shown.into_owned()), 0, hidden)
            }
            other => self.envelope(DataText::Json(other.to_string()), 0, 0),
        }
    }

    /// The envelope around `data`: the shell (its caller strings cleaned
    /// like the data: they hold the caller's login and the request path),
    /// the view, the hidden characters, then the bounds as it is written.
    fn envelope(
        &self,
        data: DataText,
        omitted_items: usize,
        hidden_chars: usize,
    ) -> Result<String, ToolError> {
        let (mut shell, truncation) = EnvelopeShell::new(self.identity, self.call, self.response);
        let hidden_in_shell = self.clean_shell(&mut shell)?;
        shell.note_view(matches!(self.view, ResultView::Compact { .. }));
        shell.note_hidden_characters(hidden_chars + hidden_in_shell);
        Ok(bounded_envelope(
            &shell,
            truncation,
            data,
            omitted_items,
            self.policy.bounds,
        ))
    }

    /// Steps 2 and 4 on the shell's caller strings (it has no webhook
    /// header): exact redaction, then masking, or in block mode the same
    /// refusal a credential in the data gets; then their invisible
    /// characters shown, as in the data (the raw tool sends a path as
    /// typed). How many were shown.
    fn clean_shell(&self, shell: &mut EnvelopeShell<'_>) -> Result<usize, ToolError> {
        let passes = self.text_passes();
        let mut families = BTreeSet::new();
        let mut hidden_chars = 0;
        for text in shell.caller_strings() {
            match passes.rewrite(text) {
                Some(Cow::Borrowed(_)) => {}
                Some(Cow::Owned(clean)) => *text = Cow::Owned(clean),
                // Block mode found a credential: name its families.
                None => families.extend(
                    masker()
                        .findings(&self.redactor.redact_str(text))
                        .into_iter()
                        .map(|f| f.family),
                ),
            }
            let (shown, count) = reveal_cow(std::mem::take(text));
            *text = shown;
            hidden_chars += count;
        }
        if families.is_empty() {
            Ok(hidden_chars)
        } else {
            Err(secret_blocked(self.response.status, &families))
        }
    }

    /// The passes of every string, redaction then this call's mode.
    fn text_passes(&self) -> TextPasses<'_> {
        TextPasses::new(
            self.redactor,
            match self.mode {
                SecretDetectionMode::Off => Masking::None,
                SecretDetectionMode::Mask => Masking::Mask,
                SecretDetectionMode::Block => Masking::Decline,
            },
        )
    }

    /// Steps 2 to 4 on a tree: exact redaction, webhook headers, the mode.
    fn clean(&self, value: &mut Value) -> Result<(), ToolError> {
        self.redactor.redact_value(value);
        redact_authorization_headers(value);
        apply_mode(value, self.mode, self.response.status)
    }
}

/// Masks the envelope, or withholds it in block mode.
fn apply_mode(
    envelope: &mut Value,
    mode: SecretDetectionMode,
    status: u16,
) -> Result<(), ToolError> {
    match mode {
        SecretDetectionMode::Off => Ok(()),
        SecretDetectionMode::Mask => {
            masker().mask_value(envelope);
            Ok(())
        }
        SecretDetectionMode::Block => {
            let families = masker().families_in_value(envelope);
            if families.is_empty() {
                Ok(())
            } else {
                Err(secret_blocked(status, &families))
            }
        }
    }
}

/// Block mode's refusal of a result that appears to hold a credential of
/// `families` (named; the values themselves are never repeated).
fn secret_blocked(status: u16, families: &BTreeSet<&'static str>) -> ToolError {
    let names: Vec<&str> = families.iter().copied().collect();
    // The status tells the model whether a write happened even though it
    // cannot see the result.
    ToolError {
        status: Some(status),
        kind: ErrorKind::SecretBlocked,
        message: format!(
            "Gitea answered HTTP {status}, but the result was withheld because it appears to contain a credential ({}). SECRET_DETECTION_MODE=block withholds such results.",
            names.join(", ")
        ),
        type_name: None,
        input_schema: None,
    }
}

/// A non-2xx answer as an error: Gitea's message with known secrets
/// redacted, control characters and `Authorization` values stripped,
/// masked (or withheld in block mode), then truncated.
pub fn gitea_error(
    response: &UpstreamResponse,
    redactor: &Redactor,
    mode: SecretDetectionMode,
) -> ToolError {
    let status = response.status;
    let clean = clean_message(&gitea_message(response), redactor);
    let (kind, message) = match mode {
        SecretDetectionMode::Off => (ErrorKind::from_status(status), clean),
        SecretDetectionMode::Mask => (
            ErrorKind::from_status(status),
            masker().mask_str(&clean).into_owned(),
        ),
        SecretDetectionMode::Block => {
            if masker().findings(&clean).is_empty() {
                (ErrorKind::from_status(status), clean)
            } else {
                (
                    ErrorKind::SecretBlocked,
                    format!(
                        "Gitea answered HTTP {status}; its message was withheld because it appears to contain a credential (SECRET_DETECTION_MODE=block)."
                    ),
                )
            }
        }
    };
    ToolError {
        status: Some(status),
        kind,
        message: truncate_message(message),
        type_name: None,
        input_schema: None,
    }
}

#[cfg(test)]
#[path = "hygiene_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "hygiene_proptests.rs"]
mod proptests;

#[cfg(test)]
#[path = "compact_tests.rs"]
mod compact_tests;
