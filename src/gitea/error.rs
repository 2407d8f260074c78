//! The kinds of failure a tool call can end in, as the model sees them in
//! `{"error": {"status", "kind", "message"}}`. One table, documented in
//! `docs/tools.md`.

use serde::Serialize;

/// Stable, machine-readable error kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    Conflict,
    PayloadTooLarge,
    ValidationFailed,
    Locked,
    RateLimited,
    ClientError,
    UpstreamError,
    UpstreamUnreachable,
    UpstreamTimeout,
    Redirect,
    InvalidArguments,
    ToolDisabled,
    SensitivePath,
    /// `SECRET_DETECTION_MODE=block` withheld a result that looked like it
    /// carried a credential.
    SecretBlocked,
    /// The call's audit entry could not be written, so it was refused.
    AuditUnavailable,
    /// The call waits for its person's confirmation (`docs/confirmation.md`).
    ConfirmationRequired,
    /// Its person has not decided yet.
    ConfirmationPending,
    /// Its person said no.
    ConfirmationDenied,
    /// Its person did not decide, or the approved call was not retried, in time.
    ConfirmationExpired,
    /// A retry's `requestState` does not fit the call: forged, altered,
    /// for other arguments or another connection, expired, or spent.
    ConfirmationInvalid,
    InternalError,
}

impl ErrorKind {
    /// The kind for a non-success HTTP status from Gitea.
    pub fn from_status(status: u16) -> Self {
        match status {
            300..=399 => Self::Redirect,
            400 => Self::BadRequest,
            401 => Self::Unauthorized,
            403 => Self::Forbidden,
            404 => Self::NotFound,
            405 => Self::MethodNotAllowed,
            409 => Self::Conflict,
            413 => Self::PayloadTooLarge,
            422 => Self::ValidationFailed,
            423 => Self::Locked,
            429 => Self::RateLimited,
            500..=599 => Self::UpstreamError,
            _ => Self::ClientError,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadRequest => "bad_request",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Conflict => "conflict",
            Self::PayloadTooLarge => "payload_too_large",
            Self::ValidationFailed => "validation_failed",
            Self::Locked => "locked",
            Self::RateLimited => "rate_limited",
            Self::ClientError => "client_error",
            Self::UpstreamError => "upstream_error",
            Self::UpstreamUnreachable => "upstream_unreachable",
            Self::UpstreamTimeout => "upstream_timeout",
            Self::Redirect => "redirect",
            Self::InvalidArguments => "invalid_arguments",
            Self::ToolDisabled => "tool_disabled",
            Self::SensitivePath => "sensitive_path",
            Self::SecretBlocked => "secret_blocked",
            Self::AuditUnavailable => "audit_unavailable",
            Self::ConfirmationRequired => "confirmation_required",
            Self::ConfirmationPending => "confirmation_pending",
            Self::ConfirmationDenied => "confirmation_denied",
            Self::ConfirmationExpired => "confirmation_expired",
            Self::ConfirmationInvalid => "confirmation_invalid",
            Self::InternalError => "internal_error",
        }
    }
}

/// A failed tool call, ready to become an `isError` result. `message` is
/// already sanitized: it never carries an argument value or a known secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub status: Option<u16>,
    pub kind: ErrorKind,
    pub message: String,
    /// With `EXPOSE_ERROR_DETAILS`, the failing type's name (never a value,
    /// message chain or backtrace), shown as `type`.
    pub type_name: Option<&'static str>,
    /// For arguments an operation's schema refused: that schema, so the
    /// caller can fix the call without searching again.
    pub input_schema: Option<serde_json::Value>,
}

impl ToolError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            status: None,
            kind,
            message: message.into(),
            type_name: None,
            input_schema: None,
        }
    }

    /// Shows the input schema the arguments did not fit.
    pub fn with_input_schema(mut self, schema: serde_json::Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// Names the failing type (`EXPOSE_ERROR_DETAILS`).
    pub fn with_type_name(mut self, type_name: &'static str) -> Self {
        self.type_name = Some(type_name);
        self
    }

    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArguments, message)
    }

    /// The `{"error": {...}}` document of ADR 0005.
    pub fn to_json(&self) -> serde_json::Value {
        let mut error = serde_json::json!({
            "status": self.status,
            "kind": self.kind.as_str(),
            "message": self.message,
        });
        if let Some(type_name) = self.type_name {
            error["type"] = serde_json::Value::from(type_name);
        }
        if let Some(schema) = &self.input_schema {
            error["input_schema"] = schema.clone();
        }
        serde_json::json!({ "error": error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_documented_kinds() {
        let table = [
            (302, "redirect"),
            (400, "bad_request"),
            (401, "unauthorized"),
            (403, "forbidden"),
            (404, "not_found"),
            (409, "conflict"),
            (422, "validation_failed"),
            (423, "locked"),
            (429, "rate_limited"),
            (418, "client_error"),
            (500, "upstream_error"),
            (503, "upstream_error"),
        ];
        for (status, kind) in table {
            assert_eq!(ErrorKind::from_status(status).as_str(), kind, "{status}");
        }
    }

    #[test]
    fn kind_serializes_as_its_table_name() {
        assert_eq!(
            serde_json::to_value(ErrorKind::UpstreamTimeout).unwrap(),
            "upstream_timeout"
        );
        assert_eq!(
            serde_json::to_value(ErrorKind::SecretBlocked).unwrap(),
            ErrorKind::SecretBlocked.as_str()
        );
    }
}
