//! The tool catalog: Gitea's OpenAPI (Swagger 2.0) document turned into one
//! MCP tool definition per operation, with the route template the executor
//! fills in. Pure: it is handed a parsed document and does no I/O.
//!
//! INTERFACE CONTRACT (other modules rely on these names; keep them):
//! - `Catalog::from_openapi(&serde_json::Value) -> Result<Catalog, CatalogError>`
//! - `Catalog::bundled() -> Catalog` (the copy of Gitea 1.27.1's document in `bundled/`)
//! - `Catalog::operations() -> &[Operation]`, `Catalog::get(tool_name) -> Option<&Operation>`
//! - `Catalog::api_version() -> &str` (the document's `info.version`)
//! - `Operation` and `Param` fields below.
//!
//! Added here: [`CatalogError`] / [`SkipReason`] / [`SkippedOperation`],
//! `Catalog::{len, is_empty, skipped, skipped_operations, toolset_names,
//! base_path, title}`, `Operation::{deprecated, consumes, is_destructive,
//! param, body_param}` and [`BUNDLED_OPENAPI`].
//!
//! How the pieces are split: [`naming`] owns tool names, [`toolsets`] owns
//! toolset names, `params` owns which parameters become which properties, and
//! `schema` owns the Swagger 2.0 → JSON Schema 2020-12 translation. This file
//! walks the document and assembles [`Operation`]s.
//!
//! Input schemas carry no `$schema`: MCP defines 2020-12 as the default
//! dialect, and 486 copies of the URI would only cost tokens in `tools/list`.
//! No schema here holds `sudo`: `mcp::caller` adds it where the caller may
//! use it, and it travels as the `Sudo` header, which the executor owns.
//!
//! Operations come out in document order (paths, then methods within a path),
//! so `tools/list` is deterministic for a given document.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value};

mod build;
pub mod core;
pub(crate) mod effects;
mod input_schema;
pub(crate) mod naming;
mod params;
pub mod projection;
mod schema;
pub mod search;
#[cfg(test)]
mod tests;
pub(crate) mod toolsets;
pub mod twins;
pub(crate) mod wording;

use build::{Builder, link_twins, string_list, warn_of_oversized_toolsets};
pub use effects::Effect;
pub use input_schema::{InputSchema, SchemaObject};
pub use naming::tool_name_for_operation_id;
pub use params::{ALTERNATE_BODY_PROPERTY, SUDO_PROPERTY, VIEW_PROPERTY, VIEWS, sudo_property};
pub use projection::{ListPlace, Node, Shapes};

/// Where an operation parameter goes in the HTTP request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamLocation {
    Path,
    Query,
    /// A multipart form field; `type: file` fields arrive base64-encoded as
    /// `{content_base64, filename, content_type?}`.
    FormData,
    /// The JSON (or text) request body, exposed as the `body` property.
    Body,
}

/// One parameter of an operation, as exposed in the tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Property name in the tool's input schema (and, except for `Body`, the
    /// name sent to Gitea).
    pub name: String,
    pub location: ParamLocation,
    pub required: bool,
    /// Query arrays with `collectionFormat: multi` are sent as repeated names.
    pub is_array: bool,
    /// A `type: file` form field (multipart upload).
    pub is_file: bool,
}

/// How the request body is encoded, when the operation has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEncoding {
    Json,
    /// `consumes: text/plain` with a string body (e.g. `renderMarkdownRaw`).
    Text,
    Multipart,
}

/// One Gitea REST operation as an MCP tool.
#[derive(Debug, Clone)]
pub struct Operation {
    /// `gitea_` + operationId in snake_case, e.g. `gitea_user_create_token`.
    pub tool_name: String,
    /// The OpenAPI operationId, e.g. `userCreateToken`.
    pub operation_id: String,
    pub method: http::Method,
    /// Route template relative to `/api/v1`, e.g. `/repos/{owner}/{repo}/issues`.
    pub route: String,
    /// The first OpenAPI tag (`repository`, `issue`, ...).
    pub toolset: String,
    /// Every toolset this operation belongs to: its tags plus finer
    /// `tag.area` toolsets (e.g. `repository.pulls`).
    pub toolsets: Vec<String>,
    pub summary: String,
    /// A short human title (the summary's first sentence or clause), see
    /// [`wording::title`]; hand-written for the core tools.
    pub title: String,
    /// What a call does to Gitea's state, see [`effects`].
    pub effect: Effect,
    /// Tool description: summary, then the OpenAPI description when it adds
    /// something (see [`wording::description`]); hand-written for the core tools.
    pub description: String,
    pub params: Vec<Param>,
    pub body_encoding: Option<BodyEncoding>,
    /// JSON Schema (draft 2020-12) of the tool's arguments, `additionalProperties: false`,
    /// with `$ref`s pointing into its own `$defs`, worded per [`wording`]. It
    /// holds `view` when the operation answers with JSON, and never `sudo`:
    /// that is added where the caller may use it (`mcp::caller`). Kept as
    /// text, parsed on first use ([`InputSchema`]).
    pub input_schema: InputSchema,
    /// The compact view of the success response ([`projection`]), or `None`
    /// when the operation declares no JSON object or list.
    pub response: Option<Node>,
    /// Media types the operation declares it produces.
    pub produces: Vec<String>,
    /// Media types the operation accepts (the operation's own, else the document's).
    pub consumes: Vec<String>,
    /// The OpenAPI document marks the operation deprecated (its description says so too).
    pub deprecated: bool,
    /// For a deprecated operation, its current twin's tool name
    /// ([`twins`]): every rule by name judges it as that twin too.
    pub judged_as: Option<String>,
    /// The names of the fields of the body it takes and of its answer (a
    /// list's items'), which the search matches weakly: a person asks for
    /// "the default branch" of a repository, or to make a user "active".
    pub fields: Vec<String>,
}

impl Operation {
    /// The names every rule by name (`DISABLED_TOOLS`, `CONFIRM_TOOLS`,
    /// `CONFIRM_SKIP_TOOLS`, the policy's `deny_tools` and
    /// `confirm_tools`) judges this operation by: its own, and a deprecated
    /// operation's current twin's ([`twins`]).
    pub fn rule_names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.tool_name.as_str()).chain(self.judged_as.as_deref())
    }

    /// GET and HEAD operations read only.
    pub fn is_read_only(&self) -> bool {
        self.method == http::Method::GET || self.method == http::Method::HEAD
    }

    /// Deletes, overwrites, merges, transfers or changes permissions
    /// (`destructiveHint: true`), per [`effects`].
    pub fn is_destructive(&self) -> bool {
        self.effect == Effect::Destructive
    }

    /// The HTTP method is idempotent (`idempotentHint`).
    pub fn is_idempotent(&self) -> bool {
        effects::is_idempotent(&self.method)
    }

    /// The parameter exposed as property `name`.
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The body parameter (property `body`, or `request_body`), if any.
    pub fn body_param(&self) -> Option<&Param> {
        self.params
            .iter()
            .find(|p| p.location == ParamLocation::Body)
    }
}

/// Gitea 1.27.1's OpenAPI document as shipped with this crate.
pub const BUNDLED_OPENAPI: &str = include_str!("bundled/swagger.v1.json");

/// Swagger 2.0 operation keys of a path item, in the order the spec lists them.
const METHODS: &[(&str, http::Method)] = &[
    ("get", http::Method::GET),
    ("put", http::Method::PUT),
    ("post", http::Method::POST),
    ("delete", http::Method::DELETE),
    ("options", http::Method::OPTIONS),
    ("head", http::Method::HEAD),
    ("patch", http::Method::PATCH),
];

/// Why a document cannot become a catalog at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("not a Swagger 2.0 document ({found})")]
    NotSwagger2 { found: String },
    #[error("the OpenAPI document has no paths")]
    NoPaths,
    #[error("no operation of the OpenAPI document could be turned into a tool ({skipped} skipped)")]
    NoOperations { skipped: usize },
}

/// Why one operation was left out of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkipReason {
    #[error("the operation is not an object")]
    NotAnObject,
    #[error("the operation has no operationId")]
    MissingOperationId,
    #[error("operationId {0} is used twice")]
    DuplicateOperationId(String),
    #[error("tool name {0} is already taken by another operation")]
    DuplicateToolName(String),
    #[error("unresolvable $ref {0}")]
    UnresolvableRef(String),
    #[error("$ref {0} points outside the document")]
    ExternalRef(String),
    #[error("invalid schema at {0}")]
    InvalidSchema(String),
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    #[error("parameter {0:?} is declared twice or clashes with a reserved property")]
    DuplicateParameter(String),
    #[error("route placeholders and path parameters differ: {0}")]
    PathParams(String),
    #[error("the operation mixes body and formData parameters")]
    BodyAndFormData,
}

/// An operation the catalog left out, for logs and the `catalog` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedOperation {
    pub method: http::Method,
    pub route: String,
    pub operation_id: Option<String>,
    pub reason: SkipReason,
}

/// Every tool of one OpenAPI document. Cheap to clone (shared, immutable).
#[derive(Debug, Clone)]
pub struct Catalog {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    operations: Vec<Operation>,
    index: HashMap<String, usize>,
    api_version: String,
    title: String,
    base_path: String,
    skipped: Vec<SkippedOperation>,
    /// Every toolset name any operation belongs to.
    toolsets: BTreeSet<String>,
    /// The object shapes the operations' `response` nodes point into.
    shapes: Arc<Shapes>,
    /// The operations' search index, built the first time a search asks.
    search: std::sync::OnceLock<search::SearchIndex>,
}

/// Every toolset name of `operations`.
fn toolsets_of(operations: &[Operation]) -> BTreeSet<String> {
    operations
        .iter()
        .flat_map(|op| op.toolsets.iter().cloned())
        .collect()
}

static BUNDLED: LazyLock<Catalog> = LazyLock::new(|| {
    // Both steps are proven by `tests::bundled_catalog_builds`; a failure here
    // is a broken build, not a runtime condition.
    let doc: Value =
        serde_json::from_str(BUNDLED_OPENAPI).expect("bundled OpenAPI document is JSON");
    Catalog::from_openapi(&doc).expect("bundled OpenAPI document converts")
});

impl Catalog {
    /// A catalog of the operations `keep` accepts (e.g. the exposed ones),
    /// in the same order.
    pub fn filtered(&self, keep: impl Fn(&Operation) -> bool) -> Catalog {
        let operations: Vec<Operation> = self
            .inner
            .operations
            .iter()
            .filter(|op| keep(op))
            .cloned()
            .collect();
        let index = operations
            .iter()
            .enumerate()
            .map(|(i, op)| (op.tool_name.clone(), i))
            .collect();
        Catalog {
            inner: Arc::new(Inner {
                toolsets: toolsets_of(&operations),
                operations,
                index,
                api_version: self.inner.api_version.clone(),
                title: self.inner.title.clone(),
                base_path: self.inner.base_path.clone(),
                skipped: self.inner.skipped.clone(),
                shapes: self.inner.shapes.clone(),
                search: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The catalog of the bundled Gitea 1.27.1 document, built once per process.
    pub fn bundled() -> Catalog {
        BUNDLED.clone()
    }

    /// Builds the catalog of a Swagger 2.0 document. Operations that cannot be
    /// turned into tools are skipped (and logged), not fatal: one odd route in a
    /// live instance's document must not take the other 484 tools down.
    pub fn from_openapi(doc: &Value) -> Result<Catalog, CatalogError> {
        let swagger = doc.get("swagger").and_then(Value::as_str);
        if swagger != Some("2.0") {
            let found = match (swagger, doc.get("openapi").and_then(Value::as_str)) {
                (Some(version), _) => format!("swagger {version:?}"),
                (None, Some(version)) => format!("openapi {version:?}"),
                (None, None) => "no swagger version".to_string(),
            };
            return Err(CatalogError::NotSwagger2 { found });
        }
        let paths = match doc.get("paths") {
            Some(Value::Object(paths)) if !paths.is_empty() => paths,
            _ => return Err(CatalogError::NoPaths),
        };
        let info = |key: &str| {
            doc.pointer(&format!("/info/{key}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let base_path = doc
            .get("basePath")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut builder = Builder {
            doc,
            definitions: schema::Definitions::from_document(doc),
            shapes: projection::ShapeBuilder::new(doc),
            consumes: string_list(doc.get("consumes")),
            produces: string_list(doc.get("produces")),
            operations: Vec::new(),
            index: HashMap::new(),
            operation_ids: BTreeSet::new(),
            skipped: Vec::new(),
        };
        for (route, path_item) in paths {
            let Value::Object(path_item) = path_item else {
                continue;
            };
            for (key, operation) in path_item {
                if let Some((_, method)) = METHODS.iter().find(|(name, _)| name == key) {
                    builder.add(route, path_item, method.clone(), operation);
                }
            }
        }
        if builder.operations.is_empty() {
            return Err(CatalogError::NoOperations {
                skipped: builder.skipped.len(),
            });
        }
        warn_of_oversized_toolsets(&builder.operations);
        link_twins(&mut builder.operations, &builder.index);
        Ok(Catalog {
            inner: Arc::new(Inner {
                toolsets: toolsets_of(&builder.operations),
                operations: builder.operations,
                index: builder.index,
                api_version: info("version"),
                title: info("title"),
                base_path: base_path.trim_end_matches('/').to_string(),
                skipped: builder.skipped,
                shapes: Arc::new(builder.shapes.into_shapes()),
                search: std::sync::OnceLock::new(),
            }),
        })
    }

    /// Every tool, in document order.
    pub fn operations(&self) -> &[Operation] {
        &self.inner.operations
    }

    /// The search index of these operations ([`search`]), built on first
    /// use: a gateway that is never searched does not pay for it.
    pub fn search_index(&self) -> &search::SearchIndex {
        self.inner
            .search
            .get_or_init(|| search::SearchIndex::new(&self.inner.operations))
    }

    /// The operation behind a tool name.
    pub fn get(&self, tool_name: &str) -> Option<&Operation> {
        self.inner
            .index
            .get(tool_name)
            .map(|&i| &self.inner.operations[i])
    }

    /// The document's `info.version` (`1.27.1` for the bundled one).
    pub fn api_version(&self) -> &str {
        &self.inner.api_version
    }

    /// The document's `info.title`.
    pub fn title(&self) -> &str {
        &self.inner.title
    }

    /// The document's `basePath` without a trailing `/` (`/api/v1`).
    pub fn base_path(&self) -> &str {
        &self.inner.base_path
    }

    pub fn len(&self) -> usize {
        self.inner.operations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.operations.is_empty()
    }

    /// How many operations of the document were left out.
    pub fn skipped(&self) -> usize {
        self.inner.skipped.len()
    }

    /// The operations left out, and why.
    #[cfg(test)]
    pub fn skipped_operations(&self) -> &[SkippedOperation] {
        &self.inner.skipped
    }

    /// Every toolset name any operation belongs to, sorted and unique.
    pub fn toolset_names(&self) -> Vec<String> {
        self.inner.toolsets.iter().cloned().collect()
    }

    /// The object shapes of the operations' compact views.
    pub fn shapes(&self) -> &Arc<Shapes> {
        &self.inner.shapes
    }

    /// The shapes of the bundled catalog.
    #[cfg(test)]
    pub fn bundled_shapes() -> &'static Shapes {
        BUNDLED.shapes()
    }

    /// True when some operation belongs to toolset `name`.
    pub fn has_toolset(&self, name: &str) -> bool {
        self.inner.toolsets.contains(name)
    }
}
