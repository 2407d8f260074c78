//! What a body sent to `/mcp` must be before rmcp sees it: one JSON-RPC 2.0
//! message. A body that is not gets a JSON-RPC error object, as JSON-RPC
//! 2.0 §5.1 names them: `-32700 Parse error` for bytes that are not JSON,
//! `-32600 Invalid Request` for JSON that is not a message, `-32602
//! Invalid params` for a request whose `params` do not fit its method.
//! rmcp would answer all three with a 415 whose text is serde's message,
//! which quotes pieces of the input back.
//!
//! The messages are fixed texts: nothing of the input is echoed except a
//! request's own `id`, and only a short one.

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, GetMeta, ProtocolVersion, RequestId,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// The longest `id` echoed in an error; a longer one is answered with
/// `null`, as an id that could not be read.
pub const MAX_ECHOED_ID_CHARS: usize = 128;

/// The typed requests the gateway serves on every wire: one of these that
/// rmcp could only read as a custom request had params that do not fit.
const SERVED_METHODS: [&str; 8] = [
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

/// Served besides on the wires with a handshake (before 2026-07-28); on the
/// stateless wire they are removed, and rmcp answers them `404` with
/// `-32601`, as SEP-2575 requires, whatever their params.
const HANDSHAKE_METHODS: [&str; 2] = ["initialize", "ping"];

/// Why a body is not a message, with what JSON-RPC says to answer.
#[derive(Debug, Clone, PartialEq)]
pub struct IntakeRefusal {
    pub kind: RefusalKind,
    /// The request's `id` when it could be read (a string of at most
    /// [`MAX_ECHOED_ID_CHARS`] or an integer); `null` otherwise.
    pub id: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// Not JSON at all (or nested deeper than serde_json's 128 levels).
    Parse { line: usize, column: usize },
    /// JSON, but not a JSON-RPC 2.0 request, notification or response.
    InvalidRequest,
    /// A JSON-RPC request whose `params` do not fit its method.
    InvalidParams,
}

impl RefusalKind {
    pub fn code(self) -> i32 {
        match self {
            Self::Parse { .. } => -32700,
            Self::InvalidRequest => -32600,
            Self::InvalidParams => -32602,
        }
    }

    pub fn message(self) -> String {
        match self {
            Self::Parse { line, column } => {
                format!(
                    "Parse error: the body is not valid JSON, or nests deeper than 128 levels (line {line}, column {column})"
                )
            }
            Self::InvalidRequest => {
                "Invalid Request: the body is not a JSON-RPC 2.0 request, notification or response"
                    .to_owned()
            }
            Self::InvalidParams => "Invalid params: `params` do not fit the method".to_owned(),
        }
    }
}

impl IntakeRefusal {
    /// The JSON-RPC error response to send back.
    pub fn response_body(&self) -> String {
        json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.kind.code(), "message": self.kind.message()},
        })
        .to_string()
    }
}

/// What intake read of a body that passed: all the gateway needs of it,
/// so that nothing reads the body again (rmcp still parses it for the
/// protocol: see the HTTP layer's `mcp_intake`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReadMessage {
    /// The request's `id` as it may be echoed (`null` for a notification,
    /// a response, or an id too long or odd to echo).
    pub id: Value,
    /// The `tools/call` the message carries, if it is one: the HTTP layer
    /// decides the step-up challenge with it.
    pub call: Option<CallToolRequestParams>,
}

/// Checks that `body` is one message rmcp will take, and returns what the
/// gateway needs of it.
///
/// A well-formed `tools/call` request, the hot path, is read once, into
/// rmcp's own types ([`well_formed_tool_call`]). Every other message fails
/// that read (most at its first field that differs) and is then parsed as
/// rmcp's own type, so what passes is what rmcp accepts; a refusal also
/// pays for a look at the JSON that names why.
///
/// `header_version` is the request's `MCP-Protocol-Version` header: with
/// the body's `_meta` it says which wire the request is on, and so which
/// methods exist.
pub fn check_message(
    body: &[u8],
    header_version: Option<&str>,
) -> Result<ReadMessage, IntakeRefusal> {
    match well_formed_tool_call(body) {
        Some(read) => Ok(read),
        None => read_as_rmcp_reads(body, header_version),
    }
}

/// A `tools/call` request as rmcp reads one, field by field.
#[derive(Deserialize)]
struct ToolCallRequest<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: CallToolRequestParams,
}

/// A `tools/call` request whose envelope and params are those rmcp reads
/// as one (`jsonrpc` "2.0", an `id` rmcp takes, params that fit
/// `CallToolRequestParams`), or `None`. rmcp's own message type is
/// untagged and flattened: reading it buffers the whole message and builds
/// a `serde_json` error for each variant it tries; this reads the message
/// once, into the params' own type (issue 30, docs/benchmarks.md).
/// Anything unusual (a duplicate key, another method) gets `None` and the
/// full check; should rmcp still refuse what passed here, the HTTP layer
/// answers `-32600` with the id read here (`src/http/mcp_intake.rs`).
fn well_formed_tool_call(body: &[u8]) -> Option<ReadMessage> {
    let request: ToolCallRequest = serde_json::from_slice(body).ok()?;
    (request.jsonrpc == "2.0" && request.method == "tools/call").then(|| ReadMessage {
        id: echoable_request_id(&request.id),
        call: Some(request.params),
    })
}

/// The message parsed as rmcp's own type: the check for every message but
/// a well-formed `tools/call`, and the refusal's reason for any.
fn read_as_rmcp_reads(
    body: &[u8],
    header_version: Option<&str>,
) -> Result<ReadMessage, IntakeRefusal> {
    let err = match serde_json::from_slice::<ClientJsonRpcMessage>(body) {
        Ok(ClientJsonRpcMessage::Request(request)) => {
            // rmcp takes a method it knows whose params do not fit (tools/call
            // with `"arguments": 5`) for a custom request, and answers
            // "method not found" naming the method: the caller would be told
            // `tools/call` does not exist.
            if let ClientRequest::CustomRequest(custom) = &request.request
                && serves(&request.request, header_version, &custom.method)
            {
                return Err(IntakeRefusal {
                    kind: RefusalKind::InvalidParams,
                    id: echoable_request_id(&request.id),
                });
            }
            return Ok(ReadMessage {
                id: echoable_request_id(&request.id),
                call: match request.request {
                    ClientRequest::CallToolRequest(call) => Some(call.params),
                    _ => None,
                },
            });
        }
        Ok(_) => {
            return Ok(ReadMessage {
                id: Value::Null,
                call: None,
            });
        }
        Err(err) => err,
    };
    if err.is_syntax() || err.is_eof() {
        return Err(IntakeRefusal {
            kind: RefusalKind::Parse {
                line: err.line(),
                column: err.column(),
            },
            id: Value::Null,
        });
    }
    // Valid JSON that rmcp's type refused: a request with a good envelope
    // has bad params; anything else is not a request.
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let id = value.get("id").map(echoable_id).unwrap_or(Value::Null);
    let has_envelope = value.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && value.get("method").is_some_and(Value::is_string)
        && value
            .get("id")
            .is_none_or(|raw| !echoable_id(raw).is_null());
    let kind = if has_envelope {
        RefusalKind::InvalidParams
    } else {
        RefusalKind::InvalidRequest
    };
    Err(IntakeRefusal { kind, id })
}

/// Whether `method` is served on the request's wire. The version is rmcp's pick:
/// the body's `_meta` protocol version, else the header, else 2025-03-26;
/// a request whose `_meta` names a version and client capabilities is on
/// the stateless wire whatever the version.
fn serves(request: &ClientRequest, header_version: Option<&str>, method: &str) -> bool {
    let meta = request.get_meta();
    let carries_stateless_meta = meta
        .missing_required_keys(&ProtocolVersion::V_2026_07_28)
        .is_empty();
    let version = meta
        .protocol_version()
        .or_else(|| {
            header_version.and_then(|v| serde_json::from_value(Value::String(v.to_owned())).ok())
        })
        .unwrap_or(ProtocolVersion::V_2025_03_26);
    let handshake = !carries_stateless_meta && version.has_initialize();
    SERVED_METHODS.contains(&method) || handshake && HANDSHAKE_METHODS.contains(&method)
}

/// A request id rmcp read, as it may be echoed.
fn echoable_request_id(id: &RequestId) -> Value {
    echoable_id(&serde_json::to_value(id).unwrap_or(Value::Null))
}

/// The id as it may be echoed: a short string or an integer, else `null`.
fn echoable_id(raw: &Value) -> Value {
    match raw {
        Value::String(s) if s.chars().count() <= MAX_ECHOED_ID_CHARS => raw.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => raw.clone(),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &str) -> IntakeRefusal {
        check_message(body.as_bytes(), None).expect_err(body)
    }

    #[test]
    fn a_request_a_notification_and_a_response_pass() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"some/extension","params":{"x":1}}"#,
        ] {
            assert!(
                check_message(body.as_bytes(), None).is_ok_and(|read| read.call.is_none()),
                "{body}"
            );
        }
    }

    #[test]
    fn the_quick_read_of_a_tool_call_agrees_with_rmcps() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":null}]}}}"#,
            r#"{"id":"x","params":{"name":"t"},"method":"tools/call","jsonrpc":"2.0","extra":1}"#,
            r#"{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1}}}"#,
        ] {
            let mut quick = well_formed_tool_call(body.as_bytes()).expect(body);
            let full = read_as_rmcp_reads(body.as_bytes(), None).unwrap();
            // rmcp moves `_meta` from the params to the request; the HTTP
            // layer reads only the name and the arguments.
            if let Some(call) = quick.call.as_mut() {
                call.meta = None;
            }
            assert_eq!(quick, full, "{body}");
        }
    }

    #[test]
    fn an_unusual_tool_call_takes_the_full_check() {
        for body in [
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"ping","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
        ] {
            assert!(well_formed_tool_call(body.as_bytes()).is_none(), "{body}");
        }
    }

    #[test]
    fn a_tool_call_is_handed_back_with_its_name_and_arguments() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":1}}}"#;
        let read = check_message(body, None).unwrap();
        let call = read.call.expect("a tools/call");
        assert_eq!(call.name, "t");
        assert_eq!(call.arguments.unwrap()["a"], json!(1));
        assert_eq!(read.id, json!(1));
    }

    #[test]
    fn a_message_that_passes_keeps_its_echoable_id() {
        let long = "i".repeat(MAX_ECHOED_ID_CHARS + 1);
        for (body, id) in [
            (
                r#"{"jsonrpc":"2.0","id":"a-1","method":"tools/list"}"#.to_owned(),
                json!("a-1"),
            ),
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":"{long}","method":"tools/call","params":{{"name":"t"}}}}"#
                ),
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
                Value::Null,
            ),
        ] {
            assert_eq!(
                check_message(body.as_bytes(), None).unwrap().id,
                id,
                "{body}"
            );
        }
    }

    #[test]
    fn bytes_that_are_not_json_are_a_parse_error_with_a_null_id() {
        let r = refusal(r#"{"jsonrpc":"2.0","id":1,"#);
        assert!(matches!(r.kind, RefusalKind::Parse { line: 1, .. }));
        assert_eq!(r.kind.code(), -32700);
        assert_eq!(r.id, Value::Null);
    }

    #[test]
    fn nesting_past_serde_jsons_limit_is_a_parse_error() {
        let deep = "[".repeat(100_000);
        assert_eq!(refusal(&deep).kind.code(), -32700);
    }

    #[test]
    fn json_that_is_not_a_message_is_an_invalid_request() {
        for body in [
            "[]",
            "\"x\"",
            "{}",
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
        ] {
            assert_eq!(refusal(body).kind, RefusalKind::InvalidRequest, "{body}");
        }
    }

    #[test]
    fn a_known_method_with_bad_params_is_invalid_params_and_keeps_its_id() {
        let r = refusal(r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":"x"}"#);
        assert_eq!(r.kind, RefusalKind::InvalidParams);
        assert_eq!(r.id, json!(42));
    }

    #[test]
    fn a_served_method_whose_params_rmcp_reads_only_as_custom_is_invalid_params() {
        let r = refusal(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":5}}"#,
        );
        assert_eq!(r.kind, RefusalKind::InvalidParams);
        assert_eq!(r.id, json!(7));
    }

    const STATELESS_META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    #[test]
    fn a_method_removed_on_the_stateless_wire_passes_to_rmcp_for_its_404() {
        for method in ["initialize", "ping"] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":5,"method":"{method}","params":{{"_meta":{STATELESS_META}}}}}"#
            );
            assert!(
                check_message(body.as_bytes(), Some("2026-07-28"))
                    .is_ok_and(|read| read.call.is_none()),
                "{body}"
            );
            assert!(
                check_message(body.as_bytes(), None).is_ok_and(|read| read.call.is_none()),
                "{body}"
            );
        }
    }

    #[test]
    fn the_header_alone_puts_a_request_on_the_stateless_wire() {
        let body = br#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}"#;
        assert!(check_message(body, Some("2026-07-28")).is_ok_and(|read| read.call.is_none()));
        assert_eq!(
            check_message(body, Some("2025-11-25")).unwrap_err().kind,
            RefusalKind::InvalidParams
        );
    }

    #[test]
    fn a_served_method_with_bad_params_on_the_stateless_wire_is_invalid_params() {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"t","arguments":5,"_meta":{STATELESS_META}}}}}"#
        );
        let refusal = check_message(body.as_bytes(), Some("2026-07-28")).unwrap_err();
        assert_eq!(refusal.kind, RefusalKind::InvalidParams);
    }

    #[test]
    fn a_method_the_gateway_does_not_serve_passes_to_rmcp() {
        assert!(
            check_message(
                br#"{"jsonrpc":"2.0","id":1,"method":"x/custom","params":{}}"#,
                None
            )
            .is_ok()
        );
    }

    #[test]
    fn a_long_or_odd_id_is_not_echoed() {
        let long = "i".repeat(MAX_ECHOED_ID_CHARS + 1);
        for id in [json!(long), json!(1.5), json!({"a": 1})] {
            let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": 1});
            assert_eq!(refusal(&body.to_string()).id, Value::Null, "{id}");
        }
    }

    #[test]
    fn the_error_quotes_nothing_of_the_input() {
        let planted = "planted-value-7f3a";
        for body in [
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"{planted}"}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{planted}","params":[1]}}"#),
            format!(r#"{{"{planted}":1}}"#),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{planted}"#
            ),
        ] {
            let text = refusal(&body).response_body();
            assert!(!text.contains(planted), "{text}");
        }
    }

    #[test]
    fn the_response_is_a_json_rpc_error_object() {
        let r = refusal("nope");
        let body: Value = serde_json::from_str(&r.response_body()).unwrap();
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["id"], Value::Null);
        assert_eq!(body["error"]["code"], -32700);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Parse error")
        );
    }
}
