//! The compact view of Gitea's answers, derived from the OpenAPI response
//! schemas when the catalog is built: for every definition, which fields
//! stay, which nested objects are written as the one field that names them,
//! and which lists hold the results. The streamed result path
//! (`gitea::hygiene::transcode`) applies it in the same pass that redacts
//! and bounds; this module only describes it. Pure.
//!
//! The rules (`docs/tools.md`, "Views"):
//! - A nested object of a naming definition ([`NAMING_FIELDS`]) becomes
//!   the value of its naming field: a user its `login`, a repository its
//!   `full_name`, a label its `name`, a milestone its `title`.
//! - URL fields go (`url`, `*_url`, `_links`), except the one a person
//!   clicks (`html_url`, `*_html_url`, an attachment's
//!   `browser_download_url`).
//! - Details go ([`DETAIL_FIELDS`]): a repository's merge styles, feature
//!   switches and watcher count, a user's account flags and follower
//!   counts. They are configuration and statistics, not what a repository
//!   or a person is.
//! - Empty values go (`null`, `""`, `0`, `false`, Go's zero dates, and
//!   lists or objects that end up empty), except in lists, where positions
//!   matter.
//! - The results themselves (the top-level object, the items of a
//!   top-level list, the items of a wrapper's lists such as
//!   `SearchResults.data`) are never collapsed; long texts inside list
//!   items are cut by the transcoder.
//! - Fields the schema does not name follow the same rules by their name
//!   and value, so a newer Gitea's extra fields are kept, not lost.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

mod rules;

pub use rules::{DETAIL_FIELDS, LIST_DETAIL_FIELDS, NAMING_FIELDS, VERBATIM_FIELDS};
use rules::{is_detail, is_list_detail, is_verbatim};

/// How one value is written in the compact view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// Anything the schema says nothing specific about: scalars as they
    /// are, objects and lists by the name-based rules.
    Any,
    /// Left out.
    Drop,
    /// A nested object written as the value of this field.
    Named(&'static str),
    /// An object of a known shape.
    Object(ShapeId),
    /// A list whose items follow this node.
    List(Box<Node>),
    /// Written as Gitea sent it (after the passes): no field rule applies
    /// inside ([`VERBATIM_FIELDS`]).
    Verbatim,
    /// A list of results: its items follow this node and are never
    /// collapsed; long texts inside them are cut.
    Results(Box<Node>),
}

/// Where a value sits, for the rules that hold only in lists
/// ([`LIST_DETAIL_FIELDS`], the person's link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListPlace {
    /// Not in a list of results: one item read alone.
    Alone,
    /// An item of a list of results itself.
    Item,
    /// Somewhere inside an item of a list of results.
    InsideItem,
}

impl ListPlace {
    /// Whether the value is an item of a list, or inside one.
    pub fn in_list(self) -> bool {
        self != Self::Alone
    }

    /// The place of a value nested in one at this place.
    pub fn nested(self) -> Self {
        match self {
            Self::Alone => Self::Alone,
            Self::Item | Self::InsideItem => Self::InsideItem,
        }
    }
}

/// An object shape in [`Shapes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShapeId(usize);

/// The fields of one object shape.
#[derive(Debug, Default)]
struct ObjectShape {
    fields: HashMap<String, Node>,
    /// Fields left out when the object is an item of a list, or inside one
    /// ([`LIST_DETAIL_FIELDS`]).
    list_details: HashSet<String>,
}

static ANY: Node = Node::Any;
static DROP: Node = Node::Drop;

/// True for a field that holds an API URL rather than content: `url`,
/// `*_url` and `_links`, but not what a person opens: `html_url` (and
/// `*_html_url`), an attachment's `browser_download_url`, its only link
/// for a person, and a commit status's `target_url`, the CI job.
pub fn is_url_field(key: &str) -> bool {
    (key == "url" || key.ends_with("_url") || key == "_links")
        && !key.ends_with("html_url")
        && key != "browser_download_url"
        // A commit status's link to the CI job: where a model looks next.
        && key != "target_url"
}

/// Every object shape of one document.
#[derive(Debug, Default)]
pub struct Shapes {
    objects: Vec<ObjectShape>,
}

impl Shapes {
    /// How the field `key` of an object of shape `id` at `place` is
    /// written. A field the schema does not name follows the name-based
    /// rules.
    pub fn field(&self, id: ShapeId, key: &str, place: ListPlace) -> &Node {
        let shape = self.objects.get(id.0);
        if place.in_list() && shape.is_some_and(|o| o.list_details.contains(key)) {
            return &DROP;
        }
        match shape.and_then(|o| o.fields.get(key)) {
            Some(_) if place == ListPlace::Item && key == PERSON_LINK => &DROP,
            Some(node) => node,
            None => generic_field(key, place),
        }
    }

    /// How a field of an object of no known shape at `place` is written.
    pub fn generic_field(key: &str, place: ListPlace) -> &'static Node {
        generic_field(key, place)
    }

    /// The fields of an answer of `node` at its top (a list's items'
    /// fields), the full view's (`ssh_url` too), in no set order.
    pub fn field_names(&self, node: &Node) -> Vec<String> {
        match node {
            Node::Object(id) => self
                .objects
                .get(id.0)
                .map_or_else(Vec::new, |shape| shape.fields.keys().cloned().collect()),
            Node::List(items) | Node::Results(items) => self.field_names(items),
            Node::Any | Node::Drop | Node::Named(_) | Node::Verbatim => Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// The link a person opens, kept on one item and left out of a list's
/// items (a large share of a folder listing, issue 44): every item of a
/// list has an identifier of its own (a number, name, sha or id). Objects
/// inside an item keep theirs: a notification's subject has no other.
const PERSON_LINK: &str = "html_url";

fn generic_field(key: &str, place: ListPlace) -> &'static Node {
    if is_url_field(key) || (place == ListPlace::Item && key == PERSON_LINK) {
        &DROP
    } else {
        &ANY
    }
}

/// Builds [`Shapes`] from a document's `definitions`, and the root node of
/// each operation's success response.
pub(crate) struct ShapeBuilder<'d> {
    doc: &'d Value,
    definitions: Option<&'d Map<String, Value>>,
    /// Each definition's shape, as nested (id assigned before its fields,
    /// so recursive definitions work).
    ids: HashMap<String, ShapeId>,
    /// Each wrapper definition's shape as a root.
    root_ids: HashMap<String, ShapeId>,
    shapes: Shapes,
}

impl<'d> ShapeBuilder<'d> {
    pub(crate) fn new(doc: &'d Value) -> Self {
        let definitions = doc.get("definitions").and_then(Value::as_object);
        let mut builder = Self {
            doc,
            definitions,
            ids: HashMap::new(),
            root_ids: HashMap::new(),
            shapes: Shapes::default(),
        };
        let Some(definitions) = definitions else {
            return builder;
        };
        for name in definitions.keys() {
            let id = builder.reserve();
            builder.ids.insert(name.clone(), id);
        }
        for (name, schema) in definitions {
            let id = builder.ids[name];
            let mut shape = builder.object_shape(schema.get("properties"), false);
            builder.drop_details(name, &mut shape);
            builder.shapes.objects[id.0] = shape;
        }
        builder
    }

    /// [`Shapes::field_names`] of the shapes built so far.
    pub(crate) fn field_names(&self, node: &Node) -> Vec<String> {
        self.shapes.field_names(node)
    }

    pub(crate) fn into_shapes(self) -> Shapes {
        self.shapes
    }

    fn reserve(&mut self) -> ShapeId {
        self.shapes.objects.push(ObjectShape::default());
        ShapeId(self.shapes.objects.len() - 1)
    }

    /// The root node of `operation`'s success response (`200`, else `201`,
    /// else any 2xx), or `None` when it declares no JSON object or list.
    pub(crate) fn response_root(&mut self, operation: &Map<String, Value>) -> Option<Node> {
        let responses = operation.get("responses")?.as_object()?;
        let response = ["200", "201"]
            .iter()
            .find_map(|code| responses.get(*code))
            .or_else(|| {
                responses
                    .iter()
                    .find(|(code, _)| code.starts_with('2'))
                    .map(|(_, r)| r)
            })?;
        let response = match response.get("$ref").and_then(Value::as_str) {
            Some(reference) => self.doc.pointer(reference.strip_prefix('#')?)?,
            None => response,
        };
        self.root_node(response.get("schema")?)
    }

    fn root_node(&mut self, schema: &Value) -> Option<Node> {
        if let Some(name) = definition_name(schema) {
            let definition = self.definitions?.get(name)?;
            if is_wrapper(definition.get("properties")) {
                return Some(Node::Object(self.wrapper_root(name, definition)));
            }
            return Some(self.ids.get(name).map_or(Node::Any, |&id| Node::Object(id)));
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("array") => Some(Node::Results(Box::new(
                schema
                    .get("items")
                    .map_or(Node::Any, |items| self.item_node(items)),
            ))),
            Some("object") | None if schema.get("properties").is_some() => {
                let properties = schema.get("properties");
                let wrapper = is_wrapper(properties);
                let id = self.reserve();
                self.shapes.objects[id.0] = self.object_shape(properties, wrapper);
                Some(Node::Object(id))
            }
            Some("object") => Some(Node::Any),
            _ => None,
        }
    }

    /// Applies the tables of `rules` to the shape of `definition`.
    fn drop_details(&self, definition: &str, shape: &mut ObjectShape) {
        for (field, node) in shape.fields.iter_mut() {
            if is_detail(definition, field) {
                *node = Node::Drop;
            } else if is_verbatim(definition, field) {
                *node = Node::Verbatim;
            } else if is_list_detail(definition, field) {
                shape.list_details.insert(field.clone());
            }
        }
    }

    /// A wrapper definition as the root: its lists are the results.
    fn wrapper_root(&mut self, name: &str, definition: &Value) -> ShapeId {
        if let Some(&id) = self.root_ids.get(name) {
            return id;
        }
        let id = self.reserve();
        self.root_ids.insert(name.to_owned(), id);
        let mut shape = self.object_shape(definition.get("properties"), true);
        self.drop_details(name, &mut shape);
        self.shapes.objects[id.0] = shape;
        id
    }

    /// An item of a result list: an object of its definition, never named.
    fn item_node(&mut self, schema: &Value) -> Node {
        match definition_name(schema).and_then(|name| self.ids.get(name)) {
            Some(&id) => Node::Object(id),
            None => self.nested_node(schema),
        }
    }

    fn object_shape(&mut self, properties: Option<&Value>, lists_are_results: bool) -> ObjectShape {
        let mut shape = ObjectShape::default();
        let Some(properties) = properties.and_then(Value::as_object) else {
            return shape;
        };
        for (key, schema) in properties {
            let node = if is_url_field(key) {
                Node::Drop
            } else if lists_are_results
                && schema.get("type").and_then(Value::as_str) == Some("array")
            {
                Node::Results(Box::new(
                    schema
                        .get("items")
                        .map_or(Node::Any, |items| self.item_node(items)),
                ))
            } else {
                self.nested_node(schema)
            };
            shape.fields.insert(key.clone(), node);
        }
        shape
    }

    /// A value nested inside a result.
    fn nested_node(&mut self, schema: &Value) -> Node {
        if let Some(name) = definition_name(schema) {
            if let Some(field) = self.naming_field(name) {
                return Node::Named(field);
            }
            return self.ids.get(name).map_or(Node::Any, |&id| Node::Object(id));
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("array") => Node::List(Box::new(
                schema
                    .get("items")
                    .map_or(Node::Any, |items| self.nested_node(items)),
            )),
            Some("object") | None if schema.get("properties").is_some() => {
                let id = self.reserve();
                self.shapes.objects[id.0] = self.object_shape(schema.get("properties"), false);
                Node::Object(id)
            }
            _ => Node::Any,
        }
    }

    /// The naming field of definition `name`, when the table names one
    /// and the definition has it.
    fn naming_field(&self, name: &str) -> Option<&'static str> {
        let (_, field) = NAMING_FIELDS.iter().find(|(def, _)| *def == name)?;
        let has_it = self
            .definitions?
            .get(name)?
            .get("properties")?
            .get(*field)
            .is_some();
        has_it.then_some(*field)
    }
}

/// `X` of a schema that is `{"$ref": "#/definitions/X"}`.
fn definition_name(schema: &Value) -> Option<&str> {
    schema.get("$ref")?.as_str()?.strip_prefix("#/definitions/")
}

/// A wrapper holds results and counts only: every property is a list of
/// objects of a definition, an integer or a boolean, and one is a list
/// (`SearchResults {data, ok}`, `Compare {commits, total_commits}`).
fn is_wrapper(properties: Option<&Value>) -> bool {
    let Some(properties) = properties.and_then(Value::as_object) else {
        return false;
    };
    let mut lists = 0;
    for schema in properties.values() {
        match schema.get("type").and_then(Value::as_str) {
            Some("array") if schema.get("items").and_then(definition_name).is_some() => lists += 1,
            Some("integer" | "boolean") => {}
            _ => return false,
        }
    }
    lists > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn root(tool: &str) -> Node {
        Catalog::bundled()
            .get(tool)
            .unwrap()
            .response
            .clone()
            .unwrap_or_else(|| panic!("{tool} has no response shape"))
    }

    fn shapes() -> &'static Shapes {
        Catalog::bundled_shapes()
    }

    fn object(node: &Node) -> ShapeId {
        match node {
            Node::Object(id) => *id,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn every_naming_field_exists_in_the_bundled_document() {
        let doc: Value = serde_json::from_str(crate::catalog::BUNDLED_OPENAPI).unwrap();
        for (definition, field) in NAMING_FIELDS {
            assert!(
                doc.pointer(&format!("/definitions/{definition}/properties/{field}"))
                    .is_some(),
                "{definition}.{field}"
            );
        }
    }

    #[test]
    fn every_detail_field_exists_in_the_bundled_document() {
        let doc: Value = serde_json::from_str(crate::catalog::BUNDLED_OPENAPI).unwrap();
        for (definition, fields) in DETAIL_FIELDS {
            let properties = doc
                .pointer(&format!("/definitions/{definition}/properties"))
                .and_then(Value::as_object)
                .unwrap_or_else(|| panic!("{definition}"));
            for pattern in *fields {
                let found = properties.keys().any(|k| match pattern.strip_suffix('*') {
                    Some(prefix) => k.starts_with(prefix),
                    None => k == pattern,
                });
                assert!(found, "{definition}.{pattern}");
            }
        }
    }

    #[test]
    fn a_repositorys_details_go_and_its_default_branch_stays() {
        let repo = object(&root("gitea_repo_get"));
        assert_eq!(
            shapes().field(repo, "allow_rebase", ListPlace::Alone),
            &Node::Drop
        );
        assert_eq!(
            shapes().field(repo, "has_wiki", ListPlace::Alone),
            &Node::Drop
        );
        assert_eq!(
            shapes().field(repo, "default_merge_style", ListPlace::Alone),
            &Node::Drop
        );
        assert_eq!(
            shapes().field(repo, "default_branch", ListPlace::Alone),
            &Node::Any
        );
        assert!(matches!(
            shapes().field(repo, "permissions", ListPlace::Alone),
            Node::Object(_)
        ));
    }

    #[test]
    fn an_issue_names_its_user_labels_milestone_and_repository() {
        let issue = object(&root("gitea_issue_get_issue"));
        assert_eq!(
            shapes().field(issue, "user", ListPlace::Alone),
            &Node::Named("login")
        );
        assert_eq!(
            shapes().field(issue, "labels", ListPlace::Alone),
            &Node::List(Box::new(Node::Named("name")))
        );
        assert_eq!(
            shapes().field(issue, "assignees", ListPlace::Alone),
            &Node::List(Box::new(Node::Named("login")))
        );
        assert_eq!(
            shapes().field(issue, "milestone", ListPlace::Alone),
            &Node::Named("title")
        );
        assert_eq!(
            shapes().field(issue, "repository", ListPlace::Alone),
            &Node::Named("full_name")
        );
    }

    #[test]
    fn url_fields_go_but_the_page_a_person_opens_stays() {
        let issue = object(&root("gitea_issue_get_issue"));
        assert_eq!(shapes().field(issue, "url", ListPlace::Alone), &Node::Drop);
        assert_eq!(
            shapes().field(issue, "html_url", ListPlace::Alone),
            &Node::Any
        );
        assert_eq!(shapes().field(issue, "title", ListPlace::Alone), &Node::Any);
        assert_eq!(shapes().field(issue, "body", ListPlace::Alone), &Node::Any);
        assert!(is_url_field("avatar_url"));
        assert!(is_url_field("_links"));
        assert!(!is_url_field("latest_comment_html_url"));
    }

    #[test]
    fn a_list_holds_results_which_are_never_collapsed() {
        let Node::Results(item) = root("gitea_issue_list_issues") else {
            panic!("not a result list");
        };
        let issue = object(&item);
        assert_eq!(
            shapes().field(issue, "user", ListPlace::Alone),
            &Node::Named("login")
        );
        let Node::Results(item) = root("gitea_repo_list_branches") else {
            panic!("not a result list");
        };
        object(&item);
    }

    #[test]
    fn a_wrappers_lists_are_the_results() {
        let search = object(&root("gitea_repo_search"));
        let Node::Results(item) = shapes().field(search, "data", ListPlace::Alone) else {
            panic!("data is not a result list");
        };
        let repository = object(item);
        assert_eq!(
            shapes().field(repository, "owner", ListPlace::Alone),
            &Node::Named("login")
        );
        assert_eq!(
            shapes().field(repository, "parent", ListPlace::Alone),
            &Node::Named("full_name")
        );
    }

    #[test]
    fn a_pull_requests_branches_stay_objects_with_their_repository_named() {
        let pull = object(&root("gitea_repo_get_pull_request"));
        let head = object(shapes().field(pull, "head", ListPlace::Alone));
        assert_eq!(
            shapes().field(head, "repo", ListPlace::Alone),
            &Node::Named("full_name")
        );
        assert_eq!(shapes().field(head, "ref", ListPlace::Alone), &Node::Any);
    }

    #[test]
    fn fields_the_schema_does_not_name_follow_the_name_rules() {
        let issue = object(&root("gitea_issue_get_issue"));
        assert_eq!(
            shapes().field(issue, "newer_field", ListPlace::Alone),
            &Node::Any
        );
        assert_eq!(
            shapes().field(issue, "newer_api_url", ListPlace::Alone),
            &Node::Drop
        );
    }

    #[test]
    fn operations_without_a_json_answer_have_no_shape() {
        let catalog = Catalog::bundled();
        assert!(catalog.get("gitea_repo_delete").unwrap().response.is_none());
        assert!(
            catalog
                .get("gitea_repo_get_raw_file")
                .unwrap()
                .response
                .is_none()
        );
    }
}
