//! JSON Schema validation of tool arguments (draft 2020-12), before anything
//! else runs. rmcp does not validate `inputSchema`; this module does.
//! Validators are compiled on first use of a tool and kept, so startup does
//! not pay for 485 compilations. Error messages give the JSON path and the
//! failed keyword, never the offending value.

use std::collections::HashMap;
use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use serde_json::{Map, Value};

use crate::catalog::InputSchema;

/// Most validation problems reported in one message.
const MAX_REPORTED_ERRORS: usize = 5;
/// Argument names quoted in messages are cut to this length.
const MAX_NAME_CHARS: usize = 64;

/// A tool's schema and its validator, compiled on first use (`None` when
/// the schema does not compile).
type LazyValidator = (InputSchema, OnceLock<Option<jsonschema::Validator>>);

/// Why arguments were refused. Its text names JSON paths and failed
/// keywords, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    #[error("no schema is known for this tool")]
    NoSchema,
    #[error("this tool's input schema is broken; the call was refused")]
    BrokenSchema,
    /// At most five problems, each one path, rule and schema path.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// Most argument names one audit entry records (no Gitea 1.27 operation
/// has more parameters than this).
pub const MAX_RECORDED_ARGUMENTS: usize = 64;

/// A compiled-on-demand validator per tool.
pub struct ArgumentValidator {
    schemas: HashMap<String, LazyValidator>,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentValidator")
            .field("tools", &self.schemas.len())
            .finish()
    }
}

impl ArgumentValidator {
    pub fn new(schemas: impl IntoIterator<Item = (String, InputSchema)>) -> Self {
        Self {
            schemas: schemas
                .into_iter()
                .map(|(name, schema)| (name, (schema, OnceLock::new())))
                .collect(),
        }
    }

    /// The names in `args` that the schema of `tool` declares as
    /// properties, in their order, at most [`MAX_RECORDED_ARGUMENTS`]: what
    /// the audit log may record of a call. A name the schema does not know
    /// is the caller's invention, and recording it would let any caller
    /// grow the log at will.
    /// `sudo` counts as known: only callers that may use it get past
    /// validation with it.
    pub fn known_argument_names(&self, tool: &str, args: &Map<String, Value>) -> Vec<String> {
        let Some(Value::Object(properties)) = self
            .schemas
            .get(tool)
            .and_then(|(schema, _)| schema.object().get("properties"))
        else {
            return Vec::new();
        };
        args.keys()
            .filter(|name| {
                properties.contains_key(name.as_str())
                    || name.as_str() == crate::catalog::SUDO_PROPERTY
            })
            .take(MAX_RECORDED_ARGUMENTS)
            .cloned()
            .collect()
    }

    /// Validates `args` against the schema of `tool`. A tool without a
    /// schema here, or whose schema does not compile, fails closed.
    /// `may_sudo`: the caller's `sudo` argument is not the schema's to
    /// judge (no schema holds it; the encoding rules check its value).
    pub fn validate(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        may_sudo: bool,
    ) -> Result<(), ArgumentError> {
        let Some((schema, compiled)) = self.schemas.get(tool) else {
            return Err(ArgumentError::NoSchema);
        };
        let validator = compiled.get_or_init(|| {
            let schema = Value::Object(schema.object().as_ref().clone());
            match jsonschema::draft202012::new(&schema) {
                Ok(v) => Some(v),
                Err(_) => {
                    tracing::error!(tool, "input schema does not compile");
                    None
                }
            }
        });
        let Some(validator) = validator else {
            return Err(ArgumentError::BrokenSchema);
        };
        let mut instance = args.clone();
        if may_sudo {
            instance.remove(crate::catalog::SUDO_PROPERTY);
        }
        let instance = Value::Object(instance);
        let problems: Vec<String> = validator
            .iter_errors(&instance)
            .take(MAX_REPORTED_ERRORS)
            .map(|e| {
                describe(
                    e.instance_path().as_str(),
                    e.schema_path().as_str(),
                    e.kind(),
                )
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ArgumentError::Invalid(problems))
        }
    }
}

fn short(name: &str) -> String {
    name.chars().take(MAX_NAME_CHARS).collect()
}

/// One problem, without the value that caused it.
fn describe(instance_path: &str, schema_path: &str, kind: &ValidationErrorKind) -> String {
    let at = if instance_path.is_empty() {
        "arguments".to_owned()
    } else {
        format!("`{instance_path}`")
    };
    let detail = match kind {
        ValidationErrorKind::Required { property } => format!(
            "is missing required property `{}`",
            short(property.as_str().unwrap_or("?"))
        ),
        ValidationErrorKind::AdditionalProperties { unexpected } => format!(
            "has unknown propert{} {}",
            if unexpected.len() == 1 { "y" } else { "ies" },
            unexpected
                .iter()
                .map(|u| format!("`{}`", short(u)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ValidationErrorKind::Type { kind } => format!("has the wrong type (expected {kind:?})")
            .replace("Single(", "")
            .replace(')', ""),
        other => format!("fails `{}`", other.keyword()),
    };
    format!("{at} {detail} (schema path `{schema_path}`)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator() -> ArgumentValidator {
        let schema = json!({
            "type": "object",
            "properties": {
                "owner": {"type": "string", "minLength": 1},
                "index": {"type": "integer"},
                "state": {"type": "string", "enum": ["open", "closed"]}
            },
            "required": ["owner"],
            "additionalProperties": false
        });
        ArgumentValidator::new([(
            "t".to_owned(),
            InputSchema::new(schema.as_object().unwrap().clone()),
        )])
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn valid_arguments_pass() {
        assert!(
            validator()
                .validate("t", &args(json!({"owner": "o", "index": 3})), false)
                .is_ok()
        );
    }

    #[test]
    fn missing_required_argument_is_named() {
        let err = validator()
            .validate("t", &args(json!({})), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("required property `owner`"), "{err}");
        assert!(err.contains("schema path `/required`"), "{err}");
    }

    #[test]
    fn unknown_argument_is_named() {
        let err = validator()
            .validate("t", &args(json!({"owner": "o", "bogus": 1})), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`bogus`"), "{err}");
    }

    #[test]
    fn wrong_type_gives_the_path_and_not_the_value() {
        let err = validator()
            .validate(
                "t",
                &args(json!({"owner": "o", "index": "secret-looking-value"})),
                false,
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("`/index`"), "{err}");
        assert!(!err.contains("secret-looking-value"), "{err}");
    }

    #[test]
    fn enum_violation_does_not_echo_the_value() {
        let err = validator()
            .validate(
                "t",
                &args(json!({"owner": "o", "state": "hunter2-password"})),
                false,
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("`enum`"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn unknown_tool_fails_closed() {
        assert!(validator().validate("nope", &Map::new(), false).is_err());
    }
}
