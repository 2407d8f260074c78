//! One `Catalog::from_openapi` run: each path and method of the document
//! becomes an [`Operation`] (or a [`SkippedOperation`] with the reason),
//! with its schema, toolsets and compact view.

use super::*;

/// State of one `from_openapi` run.
pub(super) struct Builder<'d> {
    pub(super) doc: &'d Value,
    pub(super) definitions: schema::Definitions,
    pub(super) shapes: projection::ShapeBuilder<'d>,
    pub(super) consumes: Vec<String>,
    pub(super) produces: Vec<String>,
    pub(super) operations: Vec<Operation>,
    pub(super) index: HashMap<String, usize>,
    pub(super) operation_ids: BTreeSet<String>,
    pub(super) skipped: Vec<SkippedOperation>,
}

impl Builder<'_> {
    pub(super) fn add(
        &mut self,
        route: &str,
        path_item: &Map<String, Value>,
        method: http::Method,
        operation: &Value,
    ) {
        let operation_id = operation
            .get("operationId")
            .and_then(Value::as_str)
            .filter(|id| !id.trim().is_empty())
            .map(str::to_string);
        match self.build(route, path_item, method.clone(), operation) {
            Ok(op) => {
                self.operation_ids.insert(op.operation_id.clone());
                self.index
                    .insert(op.tool_name.clone(), self.operations.len());
                self.operations.push(op);
            }
            Err(reason) => {
                tracing::warn!(
                    %method,
                    route,
                    operation_id = operation_id.as_deref().unwrap_or(""),
                    %reason,
                    "skipping OpenAPI operation: it cannot be offered as a tool"
                );
                self.skipped.push(SkippedOperation {
                    method,
                    route: route.to_string(),
                    operation_id,
                    reason,
                });
            }
        }
    }

    fn build(
        &mut self,
        route: &str,
        path_item: &Map<String, Value>,
        method: http::Method,
        operation: &Value,
    ) -> Result<Operation, SkipReason> {
        let Value::Object(operation) = operation else {
            return Err(SkipReason::NotAnObject);
        };
        let (operation_id, tool_name) = self.new_names(operation)?;
        let consumes = media_types(operation, "consumes", &self.consumes);
        let produces = media_types(operation, "produces", &self.produces);
        let input = params::build_input(&params::OperationContext {
            doc: self.doc,
            definitions: &self.definitions,
            path_item,
            operation,
            route,
            consumes: &consumes,
        })?;
        let tags = string_list(operation.get("tags"));
        let toolsets = toolsets::toolsets_for(&tags, route);
        let deprecated = operation.get("deprecated") == Some(&Value::Bool(true));
        let summary = summary_of(operation, &method, route);
        let mut description = wording::description(
            &summary,
            operation.get("description").and_then(Value::as_str),
            deprecated,
        );
        let mut title = wording::title(&summary);
        let mut input_schema = input.schema;
        wording::lean_schema(&mut input_schema);
        if let Some(core) = core::core_tool(&tool_name) {
            title = core.title.to_owned();
            description = core.description.to_owned();
            // Notes naming a property the document lacks (a live Gitea of
            // another version) are left out; the bundled document has them
            // all (tested).
            wording::set_notes(&mut input_schema, core.notes);
        }
        // Last, once nothing can skip the operation: its shapes join the
        // catalog's.
        let response = self.shapes.response_root(operation);
        if response.is_some() {
            params::add_view_property(&mut input_schema);
        }
        let effect = effects::effect_of(&method, operation_id);
        let mut fields = body_fields(&input_schema, &input.params);
        if let Some(response) = &response {
            fields.extend(self.shapes.field_names(response));
        }
        Ok(Operation {
            title,
            effect,
            tool_name,
            operation_id: operation_id.to_string(),
            method,
            route: route.to_string(),
            toolset: toolsets[0].clone(),
            toolsets,
            summary,
            description,
            params: input.params,
            body_encoding: input.body_encoding,
            input_schema: InputSchema::new(input_schema),
            response,
            produces,
            consumes,
            deprecated,
            judged_as: None,
            fields,
        })
    }

    /// The operation's id and tool name, when neither is in the catalog yet.
    fn new_names<'o>(
        &self,
        operation: &'o Map<String, Value>,
    ) -> Result<(&'o str, String), SkipReason> {
        let operation_id = operation
            .get("operationId")
            .and_then(Value::as_str)
            .filter(|id| !id.trim().is_empty())
            .ok_or(SkipReason::MissingOperationId)?;
        if self.operation_ids.contains(operation_id) {
            return Err(SkipReason::DuplicateOperationId(operation_id.to_string()));
        }
        let tool_name = tool_name_for_operation_id(operation_id);
        if self.index.contains_key(&tool_name) {
            return Err(SkipReason::DuplicateToolName(tool_name));
        }
        Ok((operation_id, tool_name))
    }
}

/// The operation's own `consumes` or `produces` (`key`), else the
/// document's.
fn media_types(operation: &Map<String, Value>, key: &str, document: &[String]) -> Vec<String> {
    match operation.get(key) {
        Some(list) => string_list(Some(list)),
        None => document.to_vec(),
    }
}

/// The operation's summary, or its method and route when it has none.
fn summary_of(operation: &Map<String, Value>, method: &http::Method, route: &str) -> String {
    match operation
        .get("summary")
        .and_then(Value::as_str)
        .map(str::trim)
    {
        Some(summary) if !summary.is_empty() => summary.to_string(),
        _ => format!("{method} {route}"),
    }
}

/// The top-level fields of the body an operation takes, as its schema
/// names them (through its `$defs`).
fn body_fields(schema: &Map<String, Value>, params: &[Param]) -> Vec<String> {
    let Some(body) = params
        .iter()
        .find(|p| p.location == ParamLocation::Body)
        .and_then(|p| schema.get("properties")?.get(&p.name))
    else {
        return Vec::new();
    };
    let body = match body
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        Some(name) => schema.get("$defs").and_then(|defs| defs.get(name)),
        None => Some(body),
    };
    body.and_then(|b| b.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// Sets each deprecated operation's [`Operation::judged_as`] to its twin's
/// tool name, when the document has the twin.
pub(super) fn link_twins(operations: &mut [Operation], index: &HashMap<String, usize>) {
    for op in operations.iter_mut().filter(|op| op.deprecated) {
        op.judged_as = twins::twin_of(&op.operation_id)
            .map(tool_name_for_operation_id)
            .filter(|name| index.contains_key(name));
    }
}

/// A live document can hold a tag too big for a client's tool limit that
/// no `SPLIT_TAGS` entry splits (the bundled one cannot: tested). Said once
/// at startup: `/mcp/x/<tag>` then lists more than such a client takes.
pub(super) fn warn_of_oversized_toolsets(operations: &[Operation]) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for name in operations.iter().flat_map(|op| op.toolsets.iter()) {
        *counts.entry(name).or_default() += 1;
    }
    for (toolset, count) in counts {
        if count > toolsets::MAX_TOOLSET_OPERATIONS {
            tracing::warn!(
                toolset,
                operations = count,
                limit = toolsets::MAX_TOOLSET_OPERATIONS,
                "a toolset holds more operations than MCP clients take; name its finer toolsets instead"
            );
        }
    }
}

pub(super) fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
