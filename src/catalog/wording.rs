//! What a model reads of a tool: its title, its description and the
//! descriptions in its input schema, made short. Every byte of `tools/list`
//! is paid for in the model's context, and Gitea's generated texts repeat
//! the parameter's name ("owner of the repo"), name the Go struct ("CreateIssueOption
//! options to create one issue") and mark what the schema already says
//! ("(optional)"). These rules cut that and keep what the names and types
//! do not say: value lists, separators, defaults, formats.
//!
//! The rules (`docs/tools.md`, "Descriptions"):
//! - A title is the summary's first sentence; a longer one is cut at its
//!   first clause (", or", " if ", " (", ", "), never mid-word.
//! - A description is the summary, then the OpenAPI description when that
//!   is short (at most [`MAX_EXTRA_DESCRIPTION_CHARS`]); a longer one adds
//!   its first sentence.
//! - In a schema: a definition's own description goes (it names the Go
//!   struct); a property description that only restates its name goes
//!   ([`RESTATEMENTS`]); "(optional)" and the "`name` (optional) is"
//!   prefix go; sentences that add nothing go ([`EMPTY_SENTENCES`]);
//!   `format: int64`/`int32` go (JSON has one integer); `type` beside an
//!   `enum` of strings goes (the values say it).
//!
//! Pure: strings in, strings out.

use serde_json::{Map, Value};

/// An OpenAPI description longer than this adds only its first sentence.
pub const MAX_EXTRA_DESCRIPTION_CHARS: usize = 240;

/// A title longer than this is cut at its first clause.
const MAX_TITLE_CHARS: usize = 60;

/// A title never passes this many characters (cut at a word, with `…`).
pub const MAX_TITLE_HARD_CHARS: usize = 80;

/// Property descriptions that only restate the property's name, matched
/// case-insensitively on the whole text (trailing `.` ignored).
pub const RESTATEMENTS: &[&str] = &[
    "owner of the repo",
    "owner of the repository",
    "name of the repo",
    "name of the repository",
    "name of the organization",
    "name of the org",
    "username of the user",
    "username of user",
    "name of the user",
    "page number of results to return (1-based)",
    "page size of results",
    "keyword",
    "search string",
    "deprecated",
];

/// Sentences of a property description that say nothing a model acts on,
/// matched as a prefix, case-insensitively.
pub const EMPTY_SENTENCES: &[&str] = &[
    "if not supplied, ",
    "non existent ",
    "non-existent ",
    "it uses names and fall back to ids",
    "default value is false",
];

/// The tool title: the summary's first sentence, without its final stop,
/// cut at its first clause when long.
pub fn title(summary: &str) -> String {
    let line = summary.lines().next().unwrap_or_default().trim();
    let sentence = first_sentence(line);
    let sentence = sentence.strip_suffix('.').unwrap_or(sentence);
    if sentence.chars().count() <= MAX_TITLE_CHARS {
        return sentence.to_owned();
    }
    let clause = [", or ", " if ", " (", ", ", " i.e", " which "]
        .iter()
        .filter_map(|mark| sentence.find(mark))
        .filter(|&at| at >= 12)
        .min()
        .map_or(sentence, |at| &sentence[..at]);
    if clause.chars().count() <= MAX_TITLE_HARD_CHARS {
        return clause.to_owned();
    }
    let mut cut: String = clause.chars().take(MAX_TITLE_HARD_CHARS - 1).collect();
    if let Some(space) = cut.rfind(' ') {
        cut.truncate(space);
    }
    cut.push('…');
    cut
}

/// The tool description: the summary, then the OpenAPI description (or
/// its first sentence when long) when it says something else.
pub fn description(summary: &str, extra: Option<&str>, deprecated: bool) -> String {
    let mut text = String::new();
    if deprecated {
        text.push_str("Deprecated. ");
    }
    text.push_str(summary.trim());
    if let Some(extra) = extra.map(str::trim)
        && !extra.is_empty()
        && extra != summary.trim()
    {
        let extra = if extra.chars().count() <= MAX_EXTRA_DESCRIPTION_CHARS {
            extra
        } else {
            first_sentence(extra)
        };
        text.push_str("\n\n");
        text.push_str(extra);
    }
    text
}

/// The text up to and including the first `. ` (or all of it).
fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(at) => &text[..=at],
        None => text,
    }
}

/// A property description after the rules, or `None` when nothing is left.
pub fn property_note(name: &str, text: &str) -> Option<String> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let bare = text.trim_end_matches('.');
    if RESTATEMENTS.iter().any(|r| bare.eq_ignore_ascii_case(r)) {
        return None;
    }
    let mut text = text.as_str();
    // "new_branch (optional) will make a new branch" → "make a new branch".
    if let Some(rest) = text.strip_prefix(name)
        && let Some(rest) = rest.strip_prefix(" (optional) ")
    {
        text = rest
            .strip_prefix("is ")
            .or_else(|| rest.strip_prefix("will "))
            .unwrap_or(rest);
    }
    let text = text
        .replace(" (optional)", "")
        .replace("Deprecated: true ", "Deprecated. ");
    let kept: Vec<&str> = sentences(&text)
        .filter(|s| {
            let lower = s.to_ascii_lowercase();
            !EMPTY_SENTENCES.iter().any(|e| lower.starts_with(e))
        })
        .collect();
    let joined = kept.join(" ");
    let joined = joined.trim().trim_end_matches('.').trim();
    (!joined.is_empty()).then(|| joined.to_owned())
}

/// The sentences of `text` (split after `. `), each trimmed.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(". ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Applies the schema rules to a tool's input schema, in place: the
/// properties at every level and every `$defs` entry; then a definition
/// used once is written where it is used (its `$ref` and name cost more
/// than they say).
pub fn lean_schema(schema: &mut Map<String, Value>) {
    lean_node(schema, false);
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for def in defs.values_mut() {
            if let Value::Object(def) = def {
                lean_node(def, true);
            }
        }
    }
    inline_single_use_definitions(schema);
}

/// Replaces each `{"$ref": "#/$defs/X"}` of a definition `X` referenced
/// exactly once (and not by itself) with the definition, and drops it
/// from `$defs`. Repeated until nothing changes, so a chain inlines fully.
fn inline_single_use_definitions(schema: &mut Map<String, Value>) {
    loop {
        let Some(Value::Object(defs)) = schema.get("$defs") else {
            return;
        };
        let text = Value::Object(schema.clone()).to_string();
        let single = defs.iter().find_map(|(name, def)| {
            let reference = format!("\"#/$defs/{name}\"");
            let used_once = text.matches(&reference).count() == 1;
            let recursive = def.to_string().contains(&reference);
            (used_once && !recursive).then(|| name.clone())
        });
        let Some(name) = single else {
            break;
        };
        let Some(Value::Object(defs)) = schema.get_mut("$defs") else {
            return;
        };
        let Some(definition) = defs.shift_remove(&name) else {
            return;
        };
        let reference = format!("#/$defs/{name}");
        let mut root = Value::Object(std::mem::take(schema));
        let replaced = replace_reference(&mut root, &reference, &definition);
        if let Value::Object(map) = root {
            *schema = map;
        }
        if !replaced {
            // Not where a schema can hold it: keep the definition.
            if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
                defs.insert(name, definition);
            }
            break;
        }
    }
    if schema
        .get("$defs")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        schema.remove("$defs");
    }
}

/// Replaces the one schema whose `$ref` is `reference` with the
/// definition; a sibling keyword of the `$ref` (a description) is kept.
fn replace_reference(node: &mut Value, reference: &str, definition: &Value) -> bool {
    match node {
        Value::Object(map) => {
            if map.get("$ref").and_then(Value::as_str) == Some(reference) {
                let mut inlined = definition.as_object().cloned().unwrap_or_default();
                map.remove("$ref");
                for (key, value) in std::mem::take(map) {
                    inlined.insert(key, value);
                }
                *node = Value::Object(inlined);
                return true;
            }
            map.values_mut()
                .any(|child| replace_reference(child, reference, definition))
        }
        Value::Array(items) => items
            .iter_mut()
            .any(|child| replace_reference(child, reference, definition)),
        _ => false,
    }
}

/// One schema object: its own keywords, then its properties and items.
fn lean_node(node: &mut Map<String, Value>, is_definition: bool) {
    if is_definition {
        node.remove("description");
    }
    if matches!(
        node.get("format").and_then(Value::as_str),
        Some("int64" | "int32")
    ) {
        node.remove("format");
    }
    // Gitea marks some strings `uniqueItems`, which only means something
    // for an array.
    if node.get("type").and_then(Value::as_str) != Some("array") {
        node.remove("uniqueItems");
    }
    let enum_of_strings = node
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|values| !values.is_empty() && values.iter().all(Value::is_string));
    if enum_of_strings && node.get("type").and_then(Value::as_str) == Some("string") {
        node.remove("type");
    }
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            let Value::Object(property) = property else {
                continue;
            };
            if let Some(Value::String(text)) = property.get("description") {
                match property_note(name, text) {
                    Some(note) => {
                        property.insert("description".into(), Value::String(note));
                    }
                    None => {
                        property.remove("description");
                    }
                }
            }
            lean_node(property, false);
        }
    }
    if let Some(Value::Object(items)) = node.get_mut("items") {
        lean_node(items, false);
    }
}

/// A core tool's schema with hand-written notes as its only property
/// descriptions: every description under `properties` (and in `$defs`)
/// goes, then each `(path, note)` is set, `path` being a property name or
/// `body.<field>`. Returns the paths that name no property (a test keeps
/// that list empty for the bundled catalog).
pub fn set_notes(schema: &mut Map<String, Value>, notes: &[(&str, &str)]) -> Vec<String> {
    strip_property_descriptions(schema);
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for def in defs.values_mut() {
            if let Value::Object(def) = def {
                strip_property_descriptions(def);
            }
        }
    }
    let mut unknown = Vec::new();
    for (path, note) in notes {
        match property_mut(schema, path) {
            Some(property) => {
                property.insert("description".into(), Value::String((*note).to_owned()));
            }
            None => unknown.push((*path).to_owned()),
        }
    }
    unknown
}

fn strip_property_descriptions(node: &mut Map<String, Value>) {
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        for property in properties.values_mut() {
            if let Value::Object(property) = property {
                property.remove("description");
                strip_property_descriptions(property);
            }
        }
    }
    if let Some(Value::Object(items)) = node.get_mut("items") {
        items.remove("description");
        strip_property_descriptions(items);
    }
}

/// The property at `path` (`name` or `body.<field>`), following a `$ref`
/// of the body into `$defs`.
fn property_mut<'s>(
    schema: &'s mut Map<String, Value>,
    path: &str,
) -> Option<&'s mut Map<String, Value>> {
    let Some((parent, field)) = path.split_once('.') else {
        return schema
            .get_mut("properties")?
            .as_object_mut()?
            .get_mut(path)?
            .as_object_mut();
    };
    let reference = schema
        .get("properties")?
        .get(parent)?
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .map(str::to_owned);
    let holder = match reference {
        Some(name) => schema.get_mut("$defs")?.get_mut(&name)?,
        None => schema.get_mut("properties")?.get_mut(parent)?,
    };
    holder
        .get_mut("properties")?
        .as_object_mut()?
        .get_mut(field)?
        .as_object_mut()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_short_summary_is_its_own_title() {
        assert_eq!(title("Get an issue"), "Get an issue");
        assert_eq!(title("Create a release."), "Create a release");
    }

    #[test]
    fn a_long_title_stops_at_its_first_sentence_or_clause() {
        assert_eq!(
            title(
                "Create an issue. If using deadline only the date will be taken into account, and time of day ignored."
            ),
            "Create an issue"
        );
        assert_eq!(
            title(
                "Update a file in a repository if SHA is set, or create the file if SHA is not set"
            ),
            "Update a file in a repository"
        );
    }

    #[test]
    fn a_title_never_ends_mid_word() {
        let long = "word ".repeat(40);
        let t = title(&long);
        assert!(t.chars().count() <= MAX_TITLE_HARD_CHARS);
        assert!(t.ends_with("word…"), "{t}");
    }

    #[test]
    fn a_long_openapi_description_adds_its_first_sentence() {
        let extra = format!("First sentence. {}", "more ".repeat(80));
        assert_eq!(
            description("Do it", Some(&extra), false),
            "Do it\n\nFirst sentence."
        );
        assert_eq!(
            description("Do it", Some("Short note"), true),
            "Deprecated. Do it\n\nShort note"
        );
    }

    #[test]
    fn restatements_of_the_name_go() {
        assert_eq!(property_note("owner", "owner of the repo"), None);
        assert_eq!(property_note("repo", "Name of the repo"), None);
        assert_eq!(
            property_note("page", "page number of results to return (1-based)"),
            None
        );
    }

    #[test]
    fn the_optional_prefix_goes_and_the_meaning_stays() {
        assert_eq!(
            property_note(
                "new_branch",
                "new_branch (optional) will make a new branch from base branch for the changes. If not supplied, the changes will be committed to the base branch"
            )
            .as_deref(),
            Some("make a new branch from base branch for the changes")
        );
    }

    #[test]
    fn value_lists_and_defaults_stay() {
        let sort = "sort repos by attribute. Supported values are \"alpha\", \"created\". Default is \"alpha\"";
        assert_eq!(property_note("sort", sort).as_deref(), Some(sort));
        assert_eq!(
            property_note(
                "labels",
                "comma separated list of label names. Fetch only issues that have any of this label names. Non existent labels are discarded."
            )
            .as_deref(),
            Some("comma separated list of label names. Fetch only issues that have any of this label names")
        );
    }

    #[test]
    fn notes_replace_every_property_description() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "index": {"type": "integer", "description": "index of the issue"},
                "q": {"type": "string", "description": "keyword"},
                "body": {"$ref": "#/$defs/Opt"}
            },
            "$defs": {"Opt": {"type": "object", "properties": {
                "labels": {"type": "array", "description": "list of label ids"},
                "title": {"type": "string", "description": "the title"}
            }}}
        });
        let unknown = set_notes(
            schema.as_object_mut().unwrap(),
            &[
                ("index", "issue number"),
                ("body.labels", "label ids"),
                ("nope", "x"),
            ],
        );
        assert_eq!(unknown, ["nope"]);
        assert_eq!(schema["properties"]["index"]["description"], "issue number");
        assert!(schema["properties"]["q"].get("description").is_none());
        assert_eq!(
            schema["$defs"]["Opt"]["properties"]["labels"]["description"],
            "label ids"
        );
        assert!(
            schema["$defs"]["Opt"]["properties"]["title"]
                .get("description")
                .is_none()
        );
    }

    #[test]
    fn a_definition_used_once_is_written_where_it_is_used() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "body": {"$ref": "#/$defs/Opt"},
                "a": {"$ref": "#/$defs/Twice"},
                "b": {"$ref": "#/$defs/Twice"},
                "tree": {"$ref": "#/$defs/Node"}
            },
            "$defs": {
                "Opt": {"type": "object", "properties": {"who": {"$ref": "#/$defs/Person"}}},
                "Person": {"type": "object", "properties": {"name": {"type": "string"}}},
                "Twice": {"type": "string"},
                "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}
            }
        });
        lean_schema(schema.as_object_mut().unwrap());
        assert_eq!(
            schema["properties"]["body"],
            json!({"type": "object", "properties": {"who": {"type": "object", "properties": {"name": {"type": "string"}}}}})
        );
        assert_eq!(schema["properties"]["a"], json!({"$ref": "#/$defs/Twice"}));
        let kept: Vec<&String> = schema["$defs"].as_object().unwrap().keys().collect();
        assert_eq!(kept, ["Twice", "Node"]);
    }

    #[test]
    fn schemas_lose_struct_names_int_formats_and_enum_types() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "owner": {"type": "string", "description": "owner of the repo"},
                "index": {"type": "integer", "format": "int64", "description": "index of the issue"},
                "state": {"type": "string", "enum": ["open", "closed"]},
                "since": {"type": "string", "format": "date-time"}
            },
            "$defs": {"X": {"description": "X options for x", "type": "object",
                            "properties": {"id": {"type": "integer", "format": "int32"}}}}
        });
        lean_schema(schema.as_object_mut().unwrap());
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "owner": {"type": "string"},
                    "index": {"type": "integer", "description": "index of the issue"},
                    "state": {"enum": ["open", "closed"]},
                    "since": {"type": "string", "format": "date-time"}
                },
                "$defs": {"X": {"type": "object", "properties": {"id": {"type": "integer"}}}}
            })
        );
    }
}
