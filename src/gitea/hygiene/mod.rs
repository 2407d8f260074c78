//! The result pipeline of one tool call, in the order that makes its
//! promises hold (ADR 0005 "Amendments", `docs/result-hygiene.md`):
//!
//! 1. decode (envelope: JSON deeper than 100 levels stays text, binaries
//!    become base64 up to `MAX_BINARY_BYTES`);
//! 2. exact redaction of every known secret (always);
//! 3. webhook `authorization_header` redaction (always);
//! 4. pattern masking per `SECRET_DETECTION_MODE`, skipped on the success
//!    of a credential-issuing operation;
//! 5. bounds: items, then characters, as the envelope's text is written.
//!
//! A JSON list or object runs steps 1 to 5 in one streamed pass over
//! Gitea's bytes (`transcode`), the envelope's other fields as a small
//! tree; everything else, and what the streamed pass declines (base64 file
//! fields, keys the passes change, webhook headers, block-mode findings),
//! runs them on a `serde_json::Value` tree. Both write the same text.
//!
//! Redaction and masking run before any cut, so a bound can only split a
//! marker, never a secret. Errors from Gitea get exact redaction, masking
//! and truncation in the same order. Pure: no I/O.
//!
//! The passes are the children of this module, `redaction` (steps 2 and
//! 3) and `bounds` (step 5), with `secrets` (which values of a call are
//! secrets, which operations get special treatment); and the leaf module
//! `crate::masking` (step 4, and the walk over a document's text that
//! redaction and masking share; the audit log masks with it too).
//! Decoding (step 1) is the envelope's, in `gitea::envelope`.

pub mod bounds;
pub mod redaction;
pub mod redactor_cache;
pub mod secrets;
pub mod transcode;

use serde_json::Value;

use self::bounds::{Bounds, DataText, bounded_envelope, cut_items};
use self::redaction::{Redactor, redact_authorization_headers};
use self::secrets::is_credential_issuing;
use self::transcode::{Masking, TextPasses, transcode};
use super::call::GiteaCall;
use super::envelope::{
    clean_message, decoded_envelope, envelope_shell, gitea_message, json_body, truncate_message,
};
use super::error::{ErrorKind, ToolError};
use super::executor::UpstreamResponse;
use crate::config::{Limits, SecretDetectionMode};
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
}

impl ResultMaking<'_> {
    /// The streamed path, or `None` when the body is not a JSON list or
    /// object it can rewrite.
    fn streamed(&self) -> Option<Result<String, ToolError>> {
        let body = json_body(self.response)?;
        let passes = TextPasses {
            redactor: self.redactor,
            masking: match self.mode {
                SecretDetectionMode::Off => Masking::None,
                SecretDetectionMode::Mask => Masking::Mask,
                SecretDetectionMode::Block => Masking::Decline,
            },
        };
        let data = transcode(body, &passes, self.policy.bounds.max_items).ok()?;
        // The shell holds the caller's login and the request path: the
        // same passes, on the tree (it is small).
        let mut shell = envelope_shell(self.identity, self.call, self.response);
        if let Err(err) = self.clean(&mut shell) {
            return Some(Err(err));
        }
        let Value::Object(shell) = shell else {
            return None;
        };
        Some(Ok(bounded_envelope(
            shell,
            DataText::Json(data.json),
            data.omitted_items,
            self.policy.bounds,
        )))
    }

    /// The tree path: the whole envelope as a `serde_json::Value`,
    /// cleaned, then bounded as it is written.
    fn tree(&self) -> Result<String, ToolError> {
        let mut envelope = decoded_envelope(
            self.identity,
            self.call,
            self.response,
            self.policy.max_binary_bytes,
        )?;
        self.clean(&mut envelope)?;
        let Value::Object(mut shell) = envelope else {
            unreachable!("the envelope is an object");
        };
        let mut data = shell.shift_remove("data").unwrap_or(Value::Null);
        let omitted = cut_items(&mut data, self.policy.bounds.max_items);
        Ok(bounded_envelope(
            shell,
            DataText::from_value(data),
            omitted,
            self.policy.bounds,
        ))
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
                return Ok(());
            }
            let names: Vec<&str> = families.into_iter().collect();
            // The status tells the model whether a write happened even
            // though it cannot see the result.
            Err(ToolError {
                status: Some(status),
                kind: ErrorKind::SecretBlocked,
                message: format!(
                    "Gitea answered HTTP {status}, but the result was withheld because it appears to contain a credential ({}). SECRET_DETECTION_MODE=block withholds such results.",
                    names.join(", ")
                ),
                type_name: None,
            })
        }
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
    }
}

#[cfg(test)]
#[path = "hygiene_tests.rs"]
mod tests;
