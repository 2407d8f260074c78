//! Swagger 2.0 schemas → JSON Schema draft 2020-12.
//!
//! This module owns the translation of one schema (and of the document's
//! `definitions`) and the `$defs` closure an input schema carries. It is
//! keyword-aware: it walks into subschemas only through the keywords that hold
//! subschemas, so a *property* named `example` or `x-foo` survives while the
//! `example` / `x-*` *keywords* are dropped, and `enum` / `default` values are
//! copied untouched.
//!
//! What changes:
//! - `$ref: #/definitions/X` → `#/$defs/X` (X is recorded for the closure);
//!   any other local `$ref` (`#/responses/..`, `#/parameters/..`) is inlined,
//!   taking the target's `schema` when it has one; a `$ref` leaving the
//!   document makes the schema unusable.
//! - Dropped: vendor extensions (`x-*`), `example`, and Swagger-only keys that
//!   are not JSON Schema (`discriminator` as a string, `collectionFormat`,
//!   `in`, `allowEmptyValue`, `name`, `xml`, `externalDocs`, nested
//!   `definitions`), plus values a 2020-12 validator would reject (a `type`
//!   outside JSON's types, a `required` that is not a list of names).
//! - `type: file` → `string`; Swagger's boolean `exclusiveMinimum` /
//!   `exclusiveMaximum` become 2020-12's numeric ones; an array-valued `items`
//!   becomes `prefixItems`.
//!
//! Everything else (`description`, `enum`, `default`, `format`, `readOnly`,
//! `required`, `items`, `additionalProperties`, `allOf`, ...) is kept.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use super::SkipReason;

const DEFINITIONS_PREFIX: &str = "#/definitions/";
const DEFS_PREFIX: &str = "#/$defs/";

/// Local `$ref`s are inlined recursively; a cycle through them (which only a
/// malformed document can build) is cut off here.
const MAX_INLINE_DEPTH: usize = 32;

/// Keys dropped wherever they appear as schema keywords.
const DROPPED_KEYWORDS: &[&str] = &[
    "example",
    "collectionFormat",
    "in",
    "allowEmptyValue",
    "name",
    "xml",
    "externalDocs",
    "definitions",
];

/// Keywords whose value is one subschema (or a boolean schema).
const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Keywords whose value is a list of subschemas.
const SCHEMA_LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas.
const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
];

const JSON_TYPES: &[&str] = &[
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Converts schemas of one document, remembering which definitions they name.
pub(crate) struct Converter<'d> {
    doc: &'d Value,
    refs: BTreeSet<String>,
    depth: usize,
}

impl<'d> Converter<'d> {
    pub(crate) fn new(doc: &'d Value) -> Self {
        Self {
            doc,
            refs: BTreeSet::new(),
            depth: 0,
        }
    }

    /// The definitions named by everything converted so far.
    pub(crate) fn into_refs(self) -> BTreeSet<String> {
        self.refs
    }

    /// Converts one Swagger schema (`at` names it in skip reasons).
    pub(crate) fn convert(&mut self, schema: &Value, at: &str) -> Result<Value, SkipReason> {
        match schema {
            Value::Bool(_) => Ok(schema.clone()),
            Value::Object(map) => self.convert_object(map, at).map(Value::Object),
            _ => Err(SkipReason::InvalidSchema(at.to_string())),
        }
    }

    fn convert_object(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
    ) -> Result<Map<String, Value>, SkipReason> {
        if let Some(reference) = map.get("$ref") {
            let Some(reference) = reference.as_str() else {
                return Err(SkipReason::InvalidSchema(format!("{at}/$ref")));
            };
            if !reference.starts_with(DEFINITIONS_PREFIX) {
                return self.inline_local_ref(reference, map, at);
            }
        }
        let mut out = Map::new();
        for (key, value) in map {
            if key.starts_with("x-") || DROPPED_KEYWORDS.contains(&key.as_str()) {
                continue;
            }
            let here = || format!("{at}/{key}");
            match key.as_str() {
                "$ref" => {
                    // Only `#/definitions/..` reaches here (see above).
                    let tail = &value.as_str().unwrap_or_default()[DEFINITIONS_PREFIX.len()..];
                    let name = tail.split('/').next().unwrap_or_default();
                    self.refs.insert(unescape_pointer_token(name));
                    out.insert(key.clone(), Value::String(format!("{DEFS_PREFIX}{tail}")));
                }
                "discriminator" if value.is_string() => {}
                "type" => {
                    if let Some(t) = convert_type(value) {
                        out.insert(key.clone(), t);
                    }
                }
                "required" => {
                    if let Some(names) = string_set(value) {
                        out.insert(key.clone(), names);
                    }
                }
                "examples" if !value.is_array() => {}
                "items" => match value {
                    Value::Array(list) => {
                        out.insert("prefixItems".into(), self.convert_list(list, &here())?);
                    }
                    _ => {
                        out.insert(key.clone(), self.convert(value, &here())?);
                    }
                },
                k if SCHEMA_KEYWORDS.contains(&k) => {
                    out.insert(key.clone(), self.convert(value, &here())?);
                }
                k if SCHEMA_LIST_KEYWORDS.contains(&k) => {
                    let Value::Array(list) = value else {
                        return Err(SkipReason::InvalidSchema(here()));
                    };
                    out.insert(key.clone(), self.convert_list(list, &here())?);
                }
                k if SCHEMA_MAP_KEYWORDS.contains(&k) => {
                    let Value::Object(members) = value else {
                        return Err(SkipReason::InvalidSchema(here()));
                    };
                    let mut converted = Map::new();
                    for (name, sub) in members {
                        converted.insert(
                            name.clone(),
                            self.convert(sub, &format!("{}/{name}", here()))?,
                        );
                    }
                    out.insert(key.clone(), Value::Object(converted));
                }
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        fix_exclusive_bound(&mut out, "exclusiveMinimum", "minimum");
        fix_exclusive_bound(&mut out, "exclusiveMaximum", "maximum");
        Ok(out)
    }

    fn convert_list(&mut self, list: &[Value], at: &str) -> Result<Value, SkipReason> {
        list.iter()
            .enumerate()
            .map(|(i, sub)| self.convert(sub, &format!("{at}/{i}")))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    }

    /// `#/responses/X`, `#/parameters/X` or any other pointer into the
    /// document: inline the target (its `schema` if it is a response or a
    /// body parameter). Sibling keywords of the `$ref` are laid over it.
    fn inline_local_ref(
        &mut self,
        reference: &str,
        map: &Map<String, Value>,
        at: &str,
    ) -> Result<Map<String, Value>, SkipReason> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(SkipReason::ExternalRef(reference.to_string()));
        };
        let target = self
            .doc
            .pointer(pointer)
            .ok_or_else(|| SkipReason::UnresolvableRef(reference.to_string()))?;
        let target = target.get("schema").unwrap_or(target);
        if self.depth >= MAX_INLINE_DEPTH {
            return Err(SkipReason::UnresolvableRef(reference.to_string()));
        }
        self.depth += 1;
        let inlined = self.convert(target, reference);
        self.depth -= 1;
        let Value::Object(mut inlined) = inlined? else {
            return Err(SkipReason::InvalidSchema(reference.to_string()));
        };
        let mut siblings = map.clone();
        siblings.remove("$ref");
        for (key, value) in self.convert_object(&siblings, at)? {
            inlined.insert(key, value);
        }
        Ok(inlined)
    }
}

/// Swagger's `type` → a 2020-12 `type`, or `None` to drop it.
fn convert_type(value: &Value) -> Option<Value> {
    fn one(t: &str) -> Option<&str> {
        match t {
            "file" => Some("string"),
            t if JSON_TYPES.contains(&t) => Some(t),
            _ => None,
        }
    }
    match value {
        Value::String(t) => one(t).map(|t| Value::String(t.into())),
        Value::Array(list) => {
            let mut types: Vec<Value> = Vec::new();
            for t in list.iter().filter_map(Value::as_str).filter_map(one) {
                if !types.iter().any(|seen| seen == t) {
                    types.push(Value::String(t.into()));
                }
            }
            (!types.is_empty()).then_some(Value::Array(types))
        }
        _ => None,
    }
}

/// A `required` list as 2020-12 wants it (unique strings), or `None`.
fn string_set(value: &Value) -> Option<Value> {
    let list = value.as_array()?;
    let mut names: Vec<Value> = Vec::with_capacity(list.len());
    for name in list {
        name.as_str()?;
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    Some(Value::Array(names))
}

/// Swagger 2.0: `exclusiveMinimum: true` qualifies `minimum`.
/// 2020-12: `exclusiveMinimum` is the bound itself.
fn fix_exclusive_bound(schema: &mut Map<String, Value>, exclusive: &str, inclusive: &str) {
    match schema.get(exclusive) {
        Some(Value::Bool(true)) => match schema.remove(inclusive) {
            Some(bound) => {
                schema.insert(exclusive.to_string(), bound);
            }
            None => {
                schema.remove(exclusive);
            }
        },
        Some(Value::Bool(false)) => {
            schema.remove(exclusive);
        }
        Some(Value::Number(_)) | None => {}
        Some(_) => {
            schema.remove(exclusive);
        }
    }
}

/// RFC 6901: `~1` is `/`, `~0` is `~`.
fn unescape_pointer_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// One converted definition and the definitions it names directly.
struct ConvertedDefinition {
    schema: Value,
    refs: BTreeSet<String>,
}

/// The document's `definitions`, each converted once; operations copy the
/// closure they need into their own `$defs`.
pub(crate) struct Definitions {
    converted: HashMap<String, Result<ConvertedDefinition, SkipReason>>,
}

impl Definitions {
    pub(crate) fn from_document(doc: &Value) -> Self {
        let mut converted = HashMap::new();
        if let Some(Value::Object(definitions)) = doc.get("definitions") {
            for (name, schema) in definitions {
                let mut converter = Converter::new(doc);
                // A broken definition only disables the operations that use it.
                let result = converter
                    .convert(schema, &format!("{DEFINITIONS_PREFIX}{name}"))
                    .map(|schema| ConvertedDefinition {
                        schema,
                        refs: converter.into_refs(),
                    });
                converted.insert(name.clone(), result);
            }
        }
        Self { converted }
    }

    /// A converted definition by name.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        match self.converted.get(name) {
            Some(Ok(def)) => Some(&def.schema),
            _ => None,
        }
    }

    /// `roots` and every definition they reach, sorted by name.
    pub(crate) fn closure(
        &self,
        roots: &BTreeSet<String>,
    ) -> Result<Map<String, Value>, SkipReason> {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut stack: Vec<&str> = roots.iter().map(String::as_str).collect();
        while let Some(name) = stack.pop() {
            if !seen.insert(name) {
                continue;
            }
            match self.converted.get(name) {
                Some(Ok(def)) => stack.extend(def.refs.iter().map(String::as_str)),
                Some(Err(reason)) => return Err(reason.clone()),
                None => {
                    return Err(SkipReason::UnresolvableRef(format!(
                        "{DEFINITIONS_PREFIX}{name}"
                    )));
                }
            }
        }
        let mut defs = Map::new();
        for name in seen {
            if let Some(Ok(def)) = self.converted.get(name) {
                defs.insert(name.to_string(), def.schema.clone());
            }
        }
        Ok(defs)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn convert(schema: Value) -> Result<Value, SkipReason> {
        let doc = json!({});
        Converter::new(&doc).convert(&schema, "#")
    }

    #[test]
    fn vendor_extensions_and_examples_are_dropped() {
        let out = convert(json!({
            "type": "object",
            "x-go-package": "code.gitea.io/gitea/modules/structs",
            "properties": {
                "state": {
                    "type": "string", "enum": ["open"], "x-go-name": "State",
                    "x-go-enum-desc": "open StateOpen", "example": "open"
                }
            },
            "discriminator": "kind", "xml": {"name": "a"}
        }))
        .unwrap();
        assert_eq!(
            out,
            json!({"type": "object", "properties": {"state": {"type": "string", "enum": ["open"]}}})
        );
    }

    #[test]
    fn properties_named_like_dropped_keywords_survive() {
        let out =
            convert(json!({"properties": {"example": {"type": "string"}, "x-y": true}})).unwrap();
        assert_eq!(
            out,
            json!({"properties": {"example": {"type": "string"}, "x-y": true}})
        );
    }

    #[test]
    fn enum_and_default_values_are_copied_verbatim() {
        let out = convert(json!({"default": {"x-a": 1}, "enum": [{"example": 2}]})).unwrap();
        assert_eq!(
            out,
            json!({"default": {"x-a": 1}, "enum": [{"example": 2}]})
        );
    }

    #[test]
    fn definition_refs_are_rewritten_and_recorded() {
        let doc = json!({});
        let mut converter = Converter::new(&doc);
        let out = converter
            .convert(&json!({"items": {"$ref": "#/definitions/Label"}}), "#")
            .unwrap();
        assert_eq!(out, json!({"items": {"$ref": "#/$defs/Label"}}));
        assert_eq!(converter.into_refs(), BTreeSet::from(["Label".to_string()]));
    }

    #[test]
    fn response_and_parameter_refs_are_inlined() {
        let doc = json!({
            "responses": {"R": {"description": "r", "schema": {"type": "string", "x-a": 1}}},
            "parameters": {"P": {"in": "body", "name": "b", "schema": {"$ref": "#/definitions/D"}}}
        });
        let mut converter = Converter::new(&doc);
        let out = converter
            .convert(
                &json!({"properties": {
                    "r": {"$ref": "#/responses/R", "description": "mine"},
                    "p": {"$ref": "#/parameters/P"}
                }}),
                "#",
            )
            .unwrap();
        assert_eq!(
            out,
            json!({"properties": {
                "r": {"type": "string", "description": "mine"},
                "p": {"$ref": "#/$defs/D"}
            }})
        );
        assert!(converter.into_refs().contains("D"));
    }

    #[test]
    fn external_and_dangling_local_refs_are_errors() {
        assert!(matches!(
            convert(json!({"$ref": "other.json#/definitions/A"})),
            Err(SkipReason::ExternalRef(_))
        ));
        assert!(matches!(
            convert(json!({"$ref": "#/responses/Nope"})),
            Err(SkipReason::UnresolvableRef(_))
        ));
    }

    #[test]
    fn self_referencing_local_refs_stop() {
        let doc = json!({"responses": {"Loop": {"schema": {"$ref": "#/responses/Loop"}}}});
        let out = Converter::new(&doc).convert(&json!({"$ref": "#/responses/Loop"}), "#");
        assert!(matches!(out, Err(SkipReason::UnresolvableRef(_))));
    }

    #[test]
    fn swagger_only_values_become_2020_12() {
        let out = convert(json!({
            "type": "file", "minimum": 1, "exclusiveMinimum": true,
            "maximum": 9, "exclusiveMaximum": false, "required": ["a", "a"],
            "items": [{"type": "string"}]
        }))
        .unwrap();
        assert_eq!(
            out,
            json!({"type": "string", "exclusiveMinimum": 1, "maximum": 9, "required": ["a"],
                   "prefixItems": [{"type": "string"}]})
        );
        assert_eq!(
            convert(json!({"type": "bogus", "required": true})).unwrap(),
            json!({})
        );
    }

    #[test]
    fn closure_follows_nested_definitions_and_reports_missing_ones() {
        let doc = json!({"definitions": {
            "A": {"properties": {"b": {"$ref": "#/definitions/B"}}},
            "B": {"items": {"$ref": "#/definitions/C"}},
            "C": {"type": "string"},
            "Unused": {"type": "string"},
            "Broken": {"$ref": "#/definitions/Missing"}
        }});
        let defs = Definitions::from_document(&doc);
        let closure = defs.closure(&BTreeSet::from(["A".to_string()])).unwrap();
        assert_eq!(closure.keys().collect::<Vec<_>>(), ["A", "B", "C"]);
        assert!(matches!(
            defs.closure(&BTreeSet::from(["Broken".to_string()])),
            Err(SkipReason::UnresolvableRef(r)) if r == "#/definitions/Missing"
        ));
    }
}
