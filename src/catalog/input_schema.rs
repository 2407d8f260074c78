//! A tool's input schema as the catalog keeps it: its compact JSON text,
//! parsed into a `serde_json` object the first time something needs one
//! (a tool list, the argument validator, a search result), then kept.
//!
//! Why text: the 486 schemas as `Value` trees held about 1.9 MB of heap
//! for the life of the process; their text is 195 KB. The default surface
//! lists a few core tools and a call validates against one schema, so most
//! trees were built and never read (docs/benchmarks.md, issue 30: peak RSS
//! at c=64 33.9 MB, 31.2 MB with the trees dropped).

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
    /// Keeps `object` as its compact text.
    pub fn new(object: SchemaObject) -> Self {
        Self(Arc::new(Kept {
            text: Value::Object(object).to_string().into_boxed_str(),
            parsed: OnceLock::new(),
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
    pub fn is_parsed(&self) -> bool {
        self.0.parsed.get().is_some()
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
                "n": {"type": "number", "minimum": 0.1, "maximum": 1e300},
                "s": {"type": "string", "pattern": "^[\\u0000-\\u001f\"]$", "default": "é\u{202e}"}
            },
            "required": ["n"]
        }));
        assert_eq!(**InputSchema::new(given.clone()).object(), given);
    }
}
