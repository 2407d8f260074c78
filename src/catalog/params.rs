//! An operation's parameters → the tool's `Param` list, its input schema and
//! its body encoding. This module owns which parameters a tool exposes and
//! under what property names; `schema.rs` owns the schema translation itself.
//!
//! Rules:
//! - Path-item parameters apply to every method of the path; the operation's
//!   own parameter of the same name and location replaces one. `$ref`s to
//!   `#/parameters/..` are resolved.
//! - `in: header` parameters are never exposed: headers are the executor's
//!   business (authentication, `Sudo`), not the model's.
//! - No schema holds `sudo`: the gateway's own `sudo` argument (sent as the
//!   `Sudo` header, so it is not in `params`) is added where the caller may
//!   use it (`mcp::caller`); an operation parameter called `sudo` is dropped
//!   in its favour. An operation that answers with JSON gets the gateway's
//!   own `view` argument ([`add_view_property`]).
//! - Path parameters are always required. An empty one is refused by the
//!   encoding rules (`gitea::encoding`) with a message naming it, so the
//!   schema spends no `minLength` on it.
//! - Query/formData arrays with `collectionFormat: multi` are arrays
//!   (`Param::is_array`); other collection formats are exposed as one string
//!   the caller joins, since that is what goes on the wire.
//! - The body parameter is the property `body` whatever its Swagger name, or
//!   `request_body` when another parameter is literally named `body`. It is
//!   required when the spec says so *or* when its schema has required fields:
//!   Gitea's generator omits `required` on most bodies (`issueCreateIssue`),
//!   yet a request without a body can never satisfy such a schema.
//! - `type: file` form fields are `{content_base64, filename, content_type?}`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::schema::{Converter, Definitions};
use super::{BodyEncoding, Param, ParamLocation, SkipReason};

/// Name of the impersonation argument, for the callers that may use it.
pub const SUDO_PROPERTY: &str = "sudo";

/// Name of the argument that picks the view of a JSON answer.
pub const VIEW_PROPERTY: &str = "view";

/// The views a JSON answer comes in, the default first.
pub const VIEWS: [&str; 2] = ["compact", "full"];

/// Property name of the body when `body` is taken by another parameter.
pub const ALTERNATE_BODY_PROPERTY: &str = "request_body";

/// Parameter keys that are also JSON Schema keywords with the same meaning.
const PARAM_SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "description",
];

/// What `build_input` produces for one operation.
pub(crate) struct Input {
    pub params: Vec<Param>,
    pub schema: Map<String, Value>,
    pub body_encoding: Option<BodyEncoding>,
}

/// Everything about the operation that shapes its input.
pub(crate) struct OperationContext<'a> {
    pub doc: &'a Value,
    pub definitions: &'a Definitions,
    pub path_item: &'a Map<String, Value>,
    pub operation: &'a Map<String, Value>,
    pub route: &'a str,
    pub consumes: &'a [String],
}

pub(crate) fn build_input(cx: &OperationContext<'_>) -> Result<Input, SkipReason> {
    let raw = merged_parameters(cx)?;
    let exposed: Vec<&Map<String, Value>> = raw
        .iter()
        .copied()
        .filter(|p| str_of(p, "in") != "header")
        .filter(|p| str_of(p, "in") == "body" || str_of(p, "name") != SUDO_PROPERTY)
        .collect();

    let has_body = exposed.iter().any(|p| str_of(p, "in") == "body");
    let has_form = exposed.iter().any(|p| str_of(p, "in") == "formData");
    if has_body && has_form {
        return Err(SkipReason::BodyAndFormData);
    }
    let body_property = if exposed
        .iter()
        .any(|p| str_of(p, "in") != "body" && str_of(p, "name") == "body")
    {
        ALTERNATE_BODY_PROPERTY
    } else {
        "body"
    };

    let mut converter = Converter::new(cx.doc);
    let mut params: Vec<Param> = Vec::with_capacity(exposed.len());
    let mut properties = Map::new();
    let mut body_encoding = None;
    for p in exposed {
        let (param, property) = match str_of(p, "in") {
            "body" => {
                if body_encoding.is_some() {
                    return Err(SkipReason::InvalidParameter(
                        "more than one body parameter".into(),
                    ));
                }
                let (param, property, encoding) = body_param(cx, &mut converter, p, body_property)?;
                body_encoding = Some(encoding);
                (param, property)
            }
            location => simple_param(&mut converter, p, param_location(p, location)?)?,
        };
        if param.name.is_empty()
            || param.name == SUDO_PROPERTY
            || param.name == VIEW_PROPERTY
            || properties.contains_key(&param.name)
        {
            return Err(SkipReason::DuplicateParameter(param.name));
        }
        properties.insert(param.name.clone(), property);
        params.push(param);
    }
    if has_form {
        body_encoding = Some(BodyEncoding::Multipart);
    }
    check_path_params(cx.route, &params)?;

    let mut required: Vec<&str> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name.as_str())
        .collect();
    required.sort_unstable();

    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), json!(required));
    }
    schema.insert("additionalProperties".into(), false.into());
    let defs = cx.definitions.closure(&converter.into_refs())?;
    if !defs.is_empty() {
        schema.insert("$defs".into(), Value::Object(defs));
    }
    Ok(Input {
        params,
        schema,
        body_encoding,
    })
}

/// Where a non-body parameter goes.
fn param_location(p: &Map<String, Value>, location: &str) -> Result<ParamLocation, SkipReason> {
    match location {
        "path" => Ok(ParamLocation::Path),
        "query" => Ok(ParamLocation::Query),
        "formData" => Ok(ParamLocation::FormData),
        other => Err(SkipReason::InvalidParameter(format!(
            "{} has unknown location {other:?}",
            str_of(p, "name")
        ))),
    }
}

/// A parameter's identity in Swagger 2.0: its `(name, in)`.
type ParamKey<'a> = (&'a str, &'a str);

/// Path-item parameters overlaid by the operation's, `$ref`s resolved.
fn merged_parameters<'a>(
    cx: &OperationContext<'a>,
) -> Result<Vec<&'a Map<String, Value>>, SkipReason> {
    // (name, in) of each entry, computed once: this runs for all 485 operations.
    let mut merged: Vec<(ParamKey<'a>, &'a Map<String, Value>)> = Vec::new();
    for source in [
        cx.path_item.get("parameters"),
        cx.operation.get("parameters"),
    ] {
        let Some(list) = source else { continue };
        let Value::Array(list) = list else {
            return Err(SkipReason::InvalidParameter(
                "parameters is not a list".into(),
            ));
        };
        for entry in list {
            let p = resolve_parameter(cx.doc, entry)?;
            let key = (str_of(p, "name"), str_of(p, "in"));
            merged.retain(|(k, _)| *k != key);
            merged.push((key, p));
        }
    }
    Ok(merged.into_iter().map(|(_, p)| p).collect())
}

fn resolve_parameter<'a>(
    doc: &'a Value,
    entry: &'a Value,
) -> Result<&'a Map<String, Value>, SkipReason> {
    let mut current = entry;
    // A chain of `$ref`s longer than this is a loop.
    for _ in 0..8 {
        let Value::Object(map) = current else {
            return Err(SkipReason::InvalidParameter(
                "parameter is not an object".into(),
            ));
        };
        let Some(reference) = map.get("$ref") else {
            return Ok(map);
        };
        let reference = reference.as_str().unwrap_or_default();
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| SkipReason::ExternalRef(reference.to_string()))?;
        current = doc
            .pointer(pointer)
            .ok_or_else(|| SkipReason::UnresolvableRef(reference.to_string()))?;
    }
    Err(SkipReason::UnresolvableRef("parameter $ref loop".into()))
}

/// A path, query or formData parameter.
fn simple_param(
    converter: &mut Converter<'_>,
    p: &Map<String, Value>,
    location: ParamLocation,
) -> Result<(Param, Value), SkipReason> {
    let name = str_of(p, "name").to_string();
    let at = format!("parameter {name}");
    let required = location == ParamLocation::Path || p.get("required") == Some(&Value::Bool(true));
    let is_file = location == ParamLocation::FormData && str_of(p, "type") == "file";
    let is_array_type = str_of(p, "type") == "array";
    let multi = str_of(p, "collectionFormat") == "multi" && location != ParamLocation::Path;

    let property = if is_file {
        file_property(p.get("description"))
    } else if is_array_type && !multi {
        joined_array_property(p)
    } else {
        let schema: Map<String, Value> = p
            .iter()
            .filter(|(key, _)| PARAM_SCHEMA_KEYS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        converter.convert(&Value::Object(schema), &at)?
    };
    let param = Param {
        name,
        location,
        required,
        is_array: is_array_type && multi,
        is_file,
    };
    Ok((param, property))
}

/// A non-`multi` array parameter: one string holding the joined values.
fn joined_array_property(p: &Map<String, Value>) -> Value {
    let separator = match str_of(p, "collectionFormat") {
        "ssv" => "a space",
        "tsv" => "a tab",
        "pipes" => "`|`",
        _ => "`,`",
    };
    let hint = format!("Several values joined with {separator}.");
    let description = match p.get("description").and_then(Value::as_str) {
        Some(d) if !d.trim().is_empty() => format!("{} {hint}", d.trim()),
        _ => hint,
    };
    json!({"type": "string", "description": description})
}

/// A `type: file` form field, uploaded base64-encoded.
fn file_property(description: Option<&Value>) -> Value {
    let mut property = json!({
        "type": "object",
        "properties": {
            "content_base64": {"type": "string", "contentEncoding": "base64", "description": "File content, base64-encoded"},
            "filename": {"type": "string", "minLength": 1, "description": "File name sent with the upload"},
            "content_type": {"type": "string", "description": "Media type (default application/octet-stream)"}
        },
        "required": ["content_base64", "filename"],
        "additionalProperties": false
    });
    if let Some(description) = description.filter(|d| d.is_string()) {
        property["description"] = description.clone();
    }
    property
}

/// The body parameter, its property schema and encoding.
fn body_param(
    cx: &OperationContext<'_>,
    converter: &mut Converter<'_>,
    p: &Map<String, Value>,
    property_name: &str,
) -> Result<(Param, Value, BodyEncoding), SkipReason> {
    let raw_schema = p.get("schema").unwrap_or(&Value::Bool(true));
    let mut property = converter.convert(raw_schema, "body parameter")?;
    if let (Some(description), Value::Object(map)) = (p.get("description"), &mut property)
        && description.is_string()
        && !map.contains_key("description")
    {
        map.insert("description".into(), description.clone());
    }
    let target = resolve_defs_ref(cx.definitions, &property);
    let required = p.get("required") == Some(&Value::Bool(true))
        || target
            .and_then(|t| t.get("required"))
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
    let is_string = target.and_then(|t| t.get("type")).and_then(Value::as_str) == Some("string");
    let consumes_text = cx.consumes.iter().any(|c| c.starts_with("text/plain"));
    let encoding = if consumes_text && is_string {
        BodyEncoding::Text
    } else {
        BodyEncoding::Json
    };
    let param = Param {
        name: property_name.to_string(),
        location: ParamLocation::Body,
        required,
        is_array: false,
        is_file: false,
    };
    Ok((param, property, encoding))
}

/// The schema itself, or the definition it is a bare `$ref` to.
fn resolve_defs_ref<'a>(definitions: &'a Definitions, schema: &'a Value) -> Option<&'a Value> {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => definitions.get(reference.strip_prefix("#/$defs/")?),
        None => Some(schema),
    }
}

/// Every `{name}` of the route has a path parameter and vice versa.
fn check_path_params(route: &str, params: &[Param]) -> Result<(), SkipReason> {
    let in_route: BTreeSet<&str> = route
        .split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
        .collect();
    let declared: BTreeSet<&str> = params
        .iter()
        .filter(|p| p.location == ParamLocation::Path)
        .map(|p| p.name.as_str())
        .collect();
    if in_route == declared {
        return Ok(());
    }
    let missing: Vec<_> = in_route.symmetric_difference(&declared).copied().collect();
    Err(SkipReason::PathParams(missing.join(", ")))
}

/// The `sudo` property, for the schemas of callers that may use it. Its
/// pattern (`^[A-Za-z0-9_.-]{1,255}$`) is the encoding rules' to check
/// (`gitea::encoding::validate_sudo`, with a message that names it), so
/// the 29 schemas of the admin's list do not each repeat it.
pub fn sudo_property() -> Value {
    json!({"type": "string"})
}

/// Adds the `view` argument to a tool's schema (an operation parameter
/// of that name was dropped in its favour).
pub(crate) fn add_view_property(schema: &mut Map<String, Value>) {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(VIEW_PROPERTY.into(), json!({"enum": VIEWS}));
    }
}

fn str_of<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or_default()
}
