//! The admitted call: one value holding what admission found, read by
//! every step after it.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::target::Target;
use crate::catalog::{Effect, Operation};

/// What the audit entry says of a call, before it runs: the operation (or
/// the raw tool's method and area) and the argument names, never values.
/// A call through a call tool is described by the operation it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallDescription {
    pub method: Option<String>,
    pub route: Option<String>,
    /// The operation a call tool runs, or the raw tool's virtual name.
    pub operation: Option<String>,
    pub arg_names: Vec<String>,
}

/// SHA-256 hex of a tool's name and its arguments in canonical form (keys
/// sorted at every level): an approval holds for exactly this call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgsDigest(String);

impl ArgsDigest {
    pub fn of(tool: &str, args: &Map<String, Value>) -> Self {
        let canonical = json!({"tool": tool, "arguments": canonical(&Value::Object(args.clone()))});
        Self(
            Sha256::digest(canonical.to_string().as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// A call that may run: the tool called, what it runs, what that does to
/// Gitea, its arguments, and what its audit entries say of it.
pub struct AdmittedCall<'a> {
    tool: &'a str,
    target: Target<'a>,
    effect: Effect,
    args: Map<String, Value>,
    description: CallDescription,
    /// Worked out when a confirmation rule first asks: most calls need
    /// no one, and pay nothing for it.
    digest: OnceLock<ArgsDigest>,
}

/// Names, never values: the arguments (and the raw tool's request) may
/// hold secrets.
impl std::fmt::Debug for AdmittedCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmittedCall")
            .field("tool", &self.tool)
            .field("effect", &self.effect)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl<'a> AdmittedCall<'a> {
    pub(super) fn new(
        tool: &'a str,
        (target, effect): (Target<'a>, Effect),
        args: Map<String, Value>,
        description: CallDescription,
    ) -> Self {
        Self {
            effect,
            tool,
            target,
            args,
            description,
            digest: OnceLock::new(),
        }
    }

    /// The tool called.
    pub fn tool(&self) -> &'a str {
        self.tool
    }

    /// What the call runs.
    pub fn target(&self) -> &Target<'a> {
        &self.target
    }

    /// The catalog operation the call runs, whichever tool runs it.
    pub fn operation(&self) -> Option<&'a Operation> {
        self.target.operation()
    }

    /// What the call does to Gitea's state.
    pub fn effect(&self) -> Effect {
        self.effect
    }

    /// Whether the call changes something on Gitea.
    pub fn writes(&self) -> bool {
        self.effect != Effect::Read
    }

    /// The arguments as the client sent them.
    pub fn args(&self) -> &Map<String, Value> {
        &self.args
    }

    /// The arguments of the operation the call runs: a call tool's inner
    /// `arguments`, else the call's own.
    pub fn operation_args(&self) -> &Map<String, Value> {
        match self.target {
            Target::Named(_) => inner_arguments(&self.args),
            _ => &self.args,
        }
    }

    /// What the call's audit entries record of it.
    pub fn description(&self) -> &CallDescription {
        &self.description
    }

    /// The route template the call reaches, or `""`.
    pub fn route(&self) -> &str {
        self.description.route.as_deref().unwrap_or_default()
    }

    /// The digest an approval of this call is bound to.
    pub fn digest(&self) -> &ArgsDigest {
        self.digest
            .get_or_init(|| ArgsDigest::of(self.tool, &self.args))
    }

    /// What the run needs: the target and the arguments.
    pub fn into_run(self) -> (Target<'a>, Map<String, Value>) {
        (self.target, self.args)
    }
}

/// A call tool's inner `arguments` (empty when missing).
pub(super) fn inner_arguments(args: &Map<String, Value>) -> &Map<String, Value> {
    static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
    match args.get("arguments") {
        Some(Value::Object(inner)) => inner,
        _ => EMPTY.get_or_init(Map::new),
    }
}
