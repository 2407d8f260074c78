//! Outcomes of a sweep call: a success, a Gitea refusal that reached a real
//! route, or a gateway fault (route misses told apart by Gitea's raw answer).

use aegis_gitea_mcp::catalog::Operation;
use aegis_gitea_mcp::config::Limits;
use aegis_gitea_mcp::gitea::{GiteaClient, build_call};
use aegis_gitea_mcp::identity::{Identity, IdentityMode};
use rmcp::model::CallToolResult;
use rmcp::service::ServiceError;
use serde_json::{Map, Value};

use crate::envelope_checks::{check_error_envelope, check_success_envelope};
use crate::fixture::Fixture;

/// The message the gateway gives a Gitea error whose body has no JSON `message`.
pub const GENERIC_404: &str = "Gitea answered with HTTP 404";

#[derive(Debug, Clone)]
pub enum Outcome {
    Ok {
        status: u16,
        /// The gateway cut `data` (its `truncation` object).
        truncation: Option<Value>,
    },
    /// Gitea said no; the request reached a real route.
    Refused {
        status: u16,
        kind: String,
        message: String,
    },
    /// The gateway's fault (or a route the catalog describes but Gitea lacks).
    Fault { reason: String },
}

/// Re-sends the request the gateway built for `op`/`args`, with the gateway's
/// own client, and returns (content type, body) of Gitea's raw answer.
pub async fn raw_answer(
    fx: &Fixture,
    op: &Operation,
    args: &Map<String, Value>,
) -> (String, Option<String>, String) {
    let limits = Limits::default();
    let call = build_call(op, args, limits.max_binary_bytes).expect("arguments build a call");
    let client = GiteaClient::new(format!("{}/api/v1", fx.gitea_url()), &limits).unwrap();
    let identity = Identity {
        login: None,
        mode: IdentityMode::Bearer,
        token: fx.admin_token().into(),
        refresh_token: None,
        renewal: None,
        access: aegis_gitea_mcp::identity::Access::ReadWrite,
    };
    let response = client.send(&identity, &call).await.expect("Gitea answers");
    let body = String::from_utf8_lossy(&response.body).into_owned();
    (sent(op, args), response.content_type, body)
}

/// The path (and query, unencoded) the gateway sends for `op`/`args`, from
/// its own `build_call`.
pub fn sent(op: &Operation, args: &Map<String, Value>) -> String {
    match build_call(op, args, Limits::default().max_binary_bytes) {
        Ok(call) if call.query.is_empty() => call.path,
        Ok(call) => {
            let q: Vec<String> = call.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{}?{}", call.path, q.join("&"))
        }
        Err(e) => format!("<not buildable: {e}>"),
    }
}

/// A route miss: the plain-text `404 page not found` of Gitea's router.
pub fn is_route_miss(content_type: Option<&str>, body: &str) -> bool {
    content_type.is_some_and(|ct| ct.starts_with("text/plain"))
        && body.trim() == "404 page not found"
}

pub async fn classify(
    fx: &Fixture,
    op: &Operation,
    args: &Map<String, Value>,
    result: Result<CallToolResult, ServiceError>,
) -> Outcome {
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            return Outcome::Fault {
                reason: format!("JSON-RPC/transport error: {e}"),
            };
        }
    };
    let text = match result.content.as_slice() {
        [item] => match item.as_text() {
            Some(t) => t.text.clone(),
            None => {
                return Outcome::Fault {
                    reason: "the one content item is not text".into(),
                };
            }
        },
        items => {
            return Outcome::Fault {
                reason: format!("{} content items instead of one", items.len()),
            };
        }
    };
    let Ok(body) = serde_json::from_str::<Value>(&text) else {
        return Outcome::Fault {
            reason: "content is not JSON".into(),
        };
    };
    if result.is_error != Some(true) {
        return match check_success_envelope(&body) {
            Ok(_) if sent(op, args).split('?').next() != body["request"]["path"].as_str() => {
                Outcome::Fault {
                    reason: format!(
                        "request.path {} is not the path built ({})",
                        body["request"]["path"],
                        sent(op, args)
                    ),
                }
            }
            Ok(status) if body["request"]["method"] == "GET" => Outcome::Ok {
                status,
                truncation: body.get("truncation").cloned(),
            },
            Ok(_) => Outcome::Fault {
                reason: format!("request.method is {}", body["request"]["method"]),
            },
            Err(e) => Outcome::Fault { reason: e },
        };
    }
    let (status, kind, message) = match check_error_envelope(&body) {
        Ok(parts) => parts,
        Err(e) => return Outcome::Fault { reason: e },
    };
    let Some(status) = status else {
        // No upstream status: the gateway refused or failed by itself
        // (invalid_arguments, upstream_unreachable, payload_too_large, ...).
        return Outcome::Fault {
            reason: format!("{kind}: {message}"),
        };
    };
    if kind == "invalid_arguments" || kind == "internal_error" {
        return Outcome::Fault {
            reason: format!("{kind} {status}: {message}"),
        };
    }
    if status == 405 {
        let (sent, _, raw) = raw_answer(fx, op, args).await;
        return Outcome::Fault {
            reason: format!(
                "405: the path matched a route of another method; sent GET {sent}, Gitea: {raw:?}"
            ),
        };
    }
    if status == 404 && message == GENERIC_404 {
        let (sent, ct, raw) = raw_answer(fx, op, args).await;
        if is_route_miss(ct.as_deref(), &raw) {
            return Outcome::Fault {
                reason: format!("route miss: GET {sent} -> Gitea {ct:?} {raw:?}"),
            };
        }
    }
    Outcome::Refused {
        status,
        kind,
        message,
    }
}
