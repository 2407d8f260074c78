//! The reads a resource, a prompt or a completion makes: each one a call
//! of a read-only operation, run by [`call::run`] as any `tools/call` is,
//! so the URL's surface, the operator's policy, the grant's scope, the
//! argument schema, redaction, hidden characters, bounds and the audit
//! entry are a tool call's. Nothing here reaches Gitea another way.

use serde_json::{Map, Value, json};
use tracing::Instrument;

use super::admission::ReadRoute;
use super::call::{self, CallContext, CallEnding, CallRequest, CallServices};
use super::discover::CALL_READ_TOOL_NAME;
use crate::identity::{Connection, Identity};
use crate::surface::Surface;
use crate::telemetry::context::Carrier;
use crate::telemetry::spans::{self, RequestSpan};

/// Who reads, through which URL, under which span.
pub struct Reader<'a> {
    pub service: &'a CallServices,
    pub identity: Identity,
    pub surface: Surface,
    pub connection: Option<Connection>,
    pub protocol_version: Option<String>,
    /// The span of the request (`resources/read`, `prompts/get`,
    /// `completion/complete`) each read's span is a child of.
    pub parent: RequestSpan,
}

/// Why a read gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFailure {
    /// The URL reaches no tool that may run the operation (refused, with
    /// its audit entry, by admission).
    NotReachable(String),
    /// The call ran, or was refused, with this error (a JSON text, as a
    /// tool's error result has it).
    Failed(String),
    /// The call waits for its person (an operator's confirmation rule
    /// names a read): a resource cannot carry the question.
    NeedsConfirmation(String),
}

impl ReadFailure {
    /// The error's kind as the error result names it (`not_found`, …).
    pub fn kind(&self) -> Option<String> {
        match self {
            Self::Failed(text) => serde_json::from_str::<Value>(text)
                .ok()?
                .pointer("/error/kind")?
                .as_str()
                .map(str::to_owned),
            _ => None,
        }
    }

    /// What to tell the client: the error result's text, or a sentence.
    pub fn describe(&self) -> String {
        match self {
            Self::NotReachable(op) => format!(
                "{op} is not reachable on this MCP URL (its tool or gitea_call_read_operation must be listed and allowed)"
            ),
            Self::Failed(text) => failed_sentence(text),
            Self::NeedsConfirmation(op) => {
                format!("{op} needs its person's confirmation here: call it as a tool")
            }
        }
    }
}

/// An error result's text (`{"error": {"status", "kind", "message"}}`) as
/// one sentence: `not_found (404): The target couldn't be found.`; any other
/// text as it is.
fn failed_sentence(text: &str) -> String {
    let Ok(parsed) = serde_json::from_str::<Value>(text) else {
        return text.to_owned();
    };
    let error = &parsed["error"];
    let (Some(kind), Some(message)) = (error["kind"].as_str(), error["message"].as_str()) else {
        return text.to_owned();
    };
    match error["status"].as_u64() {
        Some(status) => format!("{kind} ({status}): {message}"),
        None => format!("{kind}: {message}"),
    }
}

impl Reader<'_> {
    /// Runs the read-only operation `operation` with `args`; its success
    /// envelope's text.
    pub async fn read(
        &self,
        operation: &str,
        args: Map<String, Value>,
    ) -> Result<String, ReadFailure> {
        let admission = self.service.admission();
        let (name, args) = match admission.read_route(&self.surface, operation) {
            Some(ReadRoute::OwnTool) => (operation, args),
            Some(ReadRoute::CallTool) => {
                let mut wrapped = Map::new();
                wrapped.insert("name".into(), json!(operation));
                wrapped.insert("arguments".into(), Value::Object(args));
                (CALL_READ_TOOL_NAME, wrapped)
            }
            // Asked as the operation's own tool, which this URL does not
            // list: refused by admission, with its `tool_call_refused`
            // entry, as that call would be.
            None => (operation, args),
        };
        let label = call::tool_label(self.service, name);
        let span = spans::tool_call(
            label,
            self.protocol_version.as_deref(),
            Carrier::new(None, None),
            Some(&self.parent),
        );
        let context = CallContext {
            identity: &self.identity,
            surface: &self.surface,
            connection: self.connection.as_ref(),
            in_call_elicitation: None,
            session: None,
            tool_label: label,
            span: &span,
        };
        let request = CallRequest {
            name,
            args,
            retry: None,
        };
        let ending = Box::pin(call::run(
            self.service,
            self.service.runner(),
            &context,
            request,
        ))
        .instrument(span.clone())
        .await;
        match ending {
            CallEnding::Result {
                text,
                is_error: false,
            } => Ok(text),
            CallEnding::Result {
                text,
                is_error: true,
            } => Err(ReadFailure::Failed(text)),
            CallEnding::UnknownTool => Err(ReadFailure::NotReachable(operation.to_owned())),
            CallEnding::Ask(_) => Err(ReadFailure::NeedsConfirmation(operation.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_result_is_told_as_one_sentence() {
        let text = r#"{"error":{"status":404,"kind":"not_found","message":"The target couldn't be found."}}"#;
        assert_eq!(
            ReadFailure::Failed(text.into()).describe(),
            "not_found (404): The target couldn't be found."
        );
        assert_eq!(
            ReadFailure::Failed(text.into()).kind().as_deref(),
            Some("not_found")
        );
        let refused = r#"{"error":{"status":null,"kind":"tool_disabled","message":"disabled"}}"#;
        assert_eq!(
            ReadFailure::Failed(refused.into()).describe(),
            "tool_disabled: disabled"
        );
    }
}
