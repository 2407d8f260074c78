//! A tool's input schema as the catalog keeps it: its compact JSON text,
//! parsed into a `serde_json` object the first time something needs one
//! (a tool list, the argument validator, a search result), then kept.
//!
//! Why text: the schemas as `Value` trees held several times their text's
//! size in heap for the life of the process, and the default surface lists
//! a few core tools and a call validates against one schema, so most trees
//! were built and never read (docs/benchmarks.md, "The catalog's schemas
//! as text").
//!
//! A schema whose text would not read back as the same object keeps its
//! tree from the start: one nested deeper than `serde_json` reads, or one
//! holding a floating-point number (read back, a long decimal can move by
//! one unit in the last place). A live OpenAPI document could hold either;
//! the bundled one holds neither (`tool_lists`' test finds no schema
//! parsed at start).

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

/// The JSON object form rmcp's `Tool` and the validator take.
pub type SchemaObject = Map<String, Value>;

/// One operation's input schema. Clones share the text and the parsed
/// object.
#[derive(Clone)]
pub struct InputSchema(Arc<Kept>);

struct Kept {
    /// Compact JSON of an object, written by [`InputSchema::new`].
    text: Box<str>,
    parsed: OnceLock<Arc<SchemaObject>>,
}

impl InputSchema {
    /// Keeps `object` as its compact text, and as the object too when the
    /// text would not read back as the same object.
    pub fn new(object: SchemaObject) -> Self {
        let object = Value::Object(object);
        if !reads_back(&object, 1) {
            let Value::Object(object) = object else {
                unreachable!("made an object above")
            };
            return Self::parsed(Arc::new(object));
        }
        Self(Arc::new(Kept {
            text: object.to_string().into_boxed_str(),
            parsed: OnceLock::new(),
        }))
    }

    /// A schema already held parsed (a fixed tool's), shared as it is:
    /// nothing is parsed again.
    pub fn parsed(object: Arc<SchemaObject>) -> Self {
        let text = serde_json::to_string(&*object)
            .expect("a JSON object serializes")
            .into_boxed_str();
        Self(Arc::new(Kept {
            text,
            parsed: OnceLock::from(object),
        }))
    }

    /// The schema as compact JSON.
    pub fn text(&self) -> &str {
        &self.0.text
    }

    /// The schema as an object, parsed on the first call and shared after.
    pub fn object(&self) -> &Arc<SchemaObject> {
        self.0.parsed.get_or_init(|| {
            // The text is serde_json's own writing of an object, so reading
            // it back cannot fail (a test reads back every bundled schema).
            // Were it ever to, a panic fails this one request: an empty
            // schema would let every argument through.
            Arc::new(
                serde_json::from_str(&self.0.text)
                    .expect("the catalog wrote this text from a JSON object"),
            )
        })
    }

    /// The object has been parsed (for tests of what is parsed when).
    #[cfg(test)]
    pub fn is_parsed(&self) -> bool {
        self.0.parsed.get().is_some()
    }
}

/// Deepest nesting `serde_json` reads back (its recursion limit is 128
/// levels, with a margin).
const MAX_READ_BACK_DEPTH: usize = 120;

/// `value`, at nesting `depth`, reads back from its text as itself: not
/// nested past [`MAX_READ_BACK_DEPTH`], and no floating-point number.
fn reads_back(value: &Value, depth: usize) -> bool {
    match value {
        Value::Number(number) => !number.is_f64(),
        Value::Array(items) => {
            depth < MAX_READ_BACK_DEPTH && items.iter().all(|item| reads_back(item, depth + 1))
        }
        Value::Object(members) => {
            depth < MAX_READ_BACK_DEPTH
                && members.values().all(|member| reads_back(member, depth + 1))
        }
        Value::Null | Value::Bool(_) | Value::String(_) => true,
    }
}

impl std::fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("InputSchema").field(&self.text()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> SchemaObject {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("a test passes an object"),
        }
    }

    #[test]
    fn keeps_the_compact_text_in_the_objects_key_order() {
        let schema = InputSchema::new(object(json!({
            "type": "object",
            "properties": {"z": {"type": "string"}, "a": {"type": "integer"}},
            "additionalProperties": false
        })));
        assert_eq!(
            schema.text(),
            r#"{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"additionalProperties":false}"#
        );
    }

    #[test]
    fn parses_only_when_the_object_is_asked_for() {
        let schema = InputSchema::new(object(json!({"type": "object"})));
        assert!(!schema.is_parsed());
        assert_eq!(schema.object()["type"], "object");
        assert!(schema.is_parsed());
    }

    #[test]
    fn a_schema_given_parsed_is_shared_not_parsed_again() {
        let given = Arc::new(object(json!({"type": "object"})));
        let schema = InputSchema::parsed(given.clone());
        assert!(Arc::ptr_eq(schema.object(), &given));
        assert_eq!(schema.text(), r#"{"type":"object"}"#);
    }

    #[test]
    fn clones_share_one_parsed_object() {
        let schema = InputSchema::new(object(json!({"type": "object"})));
        let clone = schema.clone();
        assert!(Arc::ptr_eq(schema.object(), clone.object()));
    }

    #[test]
    fn reads_back_what_it_was_given() {
        let given = object(json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": -3, "maximum": 18446744073709551615u64},
                "s": {"type": "string", "pattern": "^[\\u0000-\\u001f\"]$", "default": "é\u{202e}"}
            },
            "required": ["n"]
        }));
        let schema = InputSchema::new(given.clone());
        assert!(!schema.is_parsed());
        assert_eq!(**schema.object(), given);
    }

    #[test]
    fn a_schema_with_a_float_keeps_its_tree() {
        // 968730.2436888135 reads back one unit in the last place off
        // without serde_json's `float_roundtrip`.
        let given = object(json!({"type": "number", "minimum": 968730.2436888135}));
        let schema = InputSchema::new(given.clone());
        assert!(schema.is_parsed());
        assert_eq!(**schema.object(), given);
    }

    #[test]
    fn a_schema_nested_past_what_serde_json_reads_keeps_its_tree() {
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        let schema = InputSchema::new(object(deep.clone()));
        assert!(schema.is_parsed());
        assert!(serde_json::from_str::<Value>(schema.text()).is_err());
        assert_eq!(Value::Object((**schema.object()).clone()), deep);
    }
}
