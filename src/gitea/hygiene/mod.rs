//! The result pipeline of one tool call, in the order that makes its
//! promises hold (ADR 0005 "Amendments", `docs/result-hygiene.md`):
//!
//! 1. decode (envelope: JSON deeper than 100 levels stays text, binaries
//!    become base64 up to `MAX_BINARY_BYTES`);
//! 2. exact redaction of every known secret (always);
//! 3. webhook `authorization_header` redaction (always);
//! 4. pattern masking per `SECRET_DETECTION_MODE`, skipped on the success
//!    of a credential-issuing operation;
//! 5. bounds: items, then characters.
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

use serde_json::Value;

use self::bounds::{Bounds, apply_bounds};
use self::redaction::{Redactor, redact_authorization_headers};
use self::secrets::is_credential_issuing;
use super::call::GiteaCall;
use super::envelope::{clean_message, decoded_envelope, gitea_message, truncate_message};
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

/// Gitea's answer as the success envelope or a sanitized error.
/// `operation_id` is the catalog operation (None for the raw tool).
pub fn tool_result(
    identity: &Identity,
    call: &GiteaCall,
    response: &UpstreamResponse,
    policy: &ResultPolicy,
    redactor: &Redactor,
    operation_id: Option<&str>,
) -> Result<Value, ToolError> {
    if !(200..300).contains(&response.status) {
        return Err(gitea_error(response, redactor, policy.mode));
    }
    let mut envelope = decoded_envelope(identity, call, response, policy.max_binary_bytes)?;
    redactor.redact_value(&mut envelope);
    redact_authorization_headers(&mut envelope);
    if !is_credential_issuing(operation_id) {
        apply_mode(&mut envelope, policy.mode, response.status)?;
    }
    apply_bounds(&mut envelope, policy.bounds);
    Ok(envelope)
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
