//! Catalog-wide tests: the bundled Gitea 1.27.1 document end to end, and
//! synthetic documents for the rules it does not exercise.

use serde_json::{Value, json};

use super::naming::is_valid_tool_name;
use super::*;

const BUNDLED_OPERATIONS: usize = 485;

fn op(name: &str) -> Operation {
    Catalog::bundled()
        .get(name)
        .unwrap_or_else(|| panic!("no tool {name}"))
        .clone()
}

fn schema(name: &str) -> Value {
    Value::Object((**op(name).input_schema.object()).clone())
}

fn required(name: &str) -> Vec<String> {
    serde_json::from_value(schema(name)["required"].clone()).unwrap_or_default()
}

/// A one-operation Swagger document around `operation` at `route`.
fn synthetic(route: &str, operation: Value) -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": "t", "version": "0"},
        "paths": {route: {"post": operation}},
        "definitions": {"Opt": {"type": "object", "properties": {"a": {"type": "string"}}}}
    })
}

/// Every `$ref` value anywhere in `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, sub) in map {
                match (key.as_str(), sub) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(sub, out),
                }
            }
        }
        Value::Array(list) => list.iter().for_each(|sub| refs(sub, out)),
        _ => {}
    }
}

#[test]
fn bundled_catalog_builds() {
    let catalog = Catalog::bundled();
    assert_eq!(catalog.api_version(), "1.27.1");
    assert_eq!(catalog.base_path(), "/api/v1");
    assert_eq!(catalog.skipped(), 0, "{:?}", catalog.skipped_operations());
}

#[test]
fn every_bundled_operation_yields_a_tool_with_a_valid_unique_name() {
    let catalog = Catalog::bundled();
    assert_eq!(catalog.len(), BUNDLED_OPERATIONS);
    let mut names = std::collections::BTreeSet::new();
    for op in catalog.operations() {
        assert!(is_valid_tool_name(&op.tool_name), "{}", op.tool_name);
        assert!(
            names.insert(op.tool_name.as_str()),
            "duplicate {}",
            op.tool_name
        );
        assert_eq!(
            catalog.get(&op.tool_name).map(|o| &o.operation_id),
            Some(&op.operation_id)
        );
    }
    let longest = names.iter().max_by_key(|n| n.len()).unwrap();
    println!(
        "{} tools; longest name {longest} ({} chars)",
        names.len(),
        longest.len()
    );
    assert!(longest.len() <= naming::MAX_TOOL_NAME_LEN);
}

#[test]
fn operations_keep_document_order() {
    let doc: Value = serde_json::from_str(BUNDLED_OPENAPI).unwrap();
    let expected: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .map(|op| op["operationId"].as_str().unwrap())
        .collect();
    let catalog = Catalog::from_openapi(&doc).unwrap();
    let actual: Vec<&str> = catalog
        .operations()
        .iter()
        .map(|o| o.operation_id.as_str())
        .collect();
    assert_eq!(actual, expected);
}

#[test]
fn every_input_schema_is_valid_draft_2020_12_and_compiles() {
    for op in Catalog::bundled().operations() {
        let schema = Value::Object((**op.input_schema.object()).clone());
        if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
            panic!("{}: {e} at {}", op.tool_name, e.instance_path());
        }
        if let Err(e) = jsonschema::draft202012::new(&schema) {
            panic!("{} does not compile: {e}", op.tool_name);
        }
    }
}

#[test]
fn no_schema_has_a_dangling_ref() {
    let mut total_bytes = 0;
    for op in Catalog::bundled().operations() {
        let schema = Value::Object((**op.input_schema.object()).clone());
        total_bytes += serde_json::to_string(&schema).unwrap().len();
        let mut found = Vec::new();
        refs(&schema, &mut found);
        for reference in found {
            let pointer = reference.strip_prefix('#').unwrap_or("not local");
            assert!(
                pointer.starts_with("/$defs/"),
                "{}: {reference}",
                op.tool_name
            );
            assert!(
                schema.pointer(pointer).is_some(),
                "{}: dangling {reference}",
                op.tool_name
            );
        }
    }
    println!("input schemas: {total_bytes} bytes serialized");
}

#[test]
fn every_schema_is_a_closed_object_without_sudo() {
    for op in Catalog::bundled().operations() {
        let s = op.input_schema.object();
        assert_eq!(s["type"], "object", "{}", op.tool_name);
        assert_eq!(s["additionalProperties"], false, "{}", op.tool_name);
        // Added per caller (mcp::caller), never in the catalog.
        assert!(s["properties"].get("sudo").is_none(), "{}", op.tool_name);
        if let Some(required) = s.get("required") {
            let list: Vec<&str> = required
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert!(
                !list.is_empty() && list.is_sorted(),
                "{}: {list:?}",
                op.tool_name
            );
        }
        assert!(op.param(SUDO_PROPERTY).is_none());
    }
}

#[test]
fn schemas_carry_no_swagger_only_keys() {
    for op in Catalog::bundled().operations() {
        let text = op.input_schema.text();
        for key in [
            "\"x-go-name\"",
            "\"x-go-package\"",
            "\"x-go-enum-desc\"",
            "\"example\"",
            "\"collectionFormat\"",
            "\"in\"",
        ] {
            assert!(
                !text.contains(&format!("{key}:")),
                "{} has {key}",
                op.tool_name
            );
        }
    }
}

#[test]
fn required_lists_match_known_operations() {
    assert_eq!(
        required("gitea_issue_create_issue"),
        ["body", "owner", "repo"]
    );
    assert_eq!(
        required("gitea_repo_get_file_contents"),
        ["body", "owner", "repo"]
    );
    assert_eq!(
        required("gitea_repo_get_raw_file"),
        ["filepath", "owner", "repo"]
    );
    assert_eq!(required("gitea_get_version"), Vec::<String>::new());
    assert!(schema("gitea_get_version").get("required").is_none());
    // A body whose schema requires nothing stays optional.
    assert_eq!(required("gitea_repo_edit"), ["owner", "repo"]);
}

#[test]
fn query_enums_and_defaults_are_carried() {
    let list = schema("gitea_issue_list_issues");
    assert_eq!(
        list["properties"]["state"]["enum"],
        json!(["closed", "open", "all"])
    );
    // The values say the type.
    assert!(list["properties"]["state"].get("type").is_none());
    let search = schema("gitea_issue_search_issues");
    assert_eq!(search["properties"]["state"]["default"], "open");
    assert_eq!(search["properties"]["page"]["minimum"], 1);
    assert_eq!(
        search["properties"]["assigned"],
        json!({"type": "boolean", "default": false, "description": "Filter issues or pulls assigned to the authenticated user"})
    );
}

#[test]
fn path_params_are_required_strings_or_integers() {
    // An empty one is refused by the encoding rules (gitea::encoding), so
    // the schema spends no `minLength` on it.
    let s = schema("gitea_issue_get_issue");
    assert_eq!(s["properties"]["owner"], json!({"type": "string"}));
    assert_eq!(s["properties"]["index"]["type"], "integer");
    let op = op("gitea_issue_get_issue");
    assert!(
        op.params
            .iter()
            .filter(|p| p.location == ParamLocation::Path)
            .all(|p| p.required)
    );
}

#[test]
fn multi_arrays_are_arrays() {
    let op = op("gitea_notify_get_list");
    let p = op.param("subject-type").unwrap();
    assert!(p.is_array && p.location == ParamLocation::Query);
    let s = &op.input_schema.object()["properties"]["subject-type"];
    assert_eq!(s["type"], "array");
    assert_eq!(
        s["items"]["enum"],
        json!(["issue", "pull", "commit", "repository"])
    );
}

#[test]
fn defs_hold_the_transitive_closure_less_what_is_used_once() {
    // ChangeFilesOptions, ChangeFileOperation and CommitDateOptions are
    // used once each, so they are written in place; Identity twice
    // (author and committer).
    let s = schema("gitea_repo_change_files");
    let defs: Vec<&String> = s["$defs"].as_object().unwrap().keys().collect();
    assert_eq!(defs, ["Identity"]);
    let body = &s["properties"]["body"];
    assert_eq!(body["properties"]["author"]["$ref"], "#/$defs/Identity");
    assert_eq!(body["properties"]["files"]["items"]["type"], "object");
    assert!(schema("gitea_get_version").get("$defs").is_none());
}

#[test]
fn body_is_json_and_named_body() {
    let op = op("gitea_issue_create_issue");
    assert_eq!(op.body_encoding, Some(BodyEncoding::Json));
    let body = op.body_param().unwrap();
    assert_eq!((body.name.as_str(), body.required), ("body", true));
}

#[test]
fn attachment_uploads_are_multipart_file_params() {
    for name in [
        "gitea_issue_create_issue_attachment",
        "gitea_repo_create_release_attachment",
    ] {
        let op = op(name);
        assert_eq!(op.body_encoding, Some(BodyEncoding::Multipart), "{name}");
        let p = op.param("attachment").unwrap();
        assert!(p.is_file && p.location == ParamLocation::FormData, "{name}");
        let s = &op.input_schema.object()["properties"]["attachment"];
        assert_eq!(s["required"], json!(["content_base64", "filename"]));
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(
            s["properties"]["content_base64"]["contentEncoding"],
            "base64"
        );
    }
}

#[test]
fn raw_markdown_is_a_text_body() {
    let op = op("gitea_render_markdown_raw");
    assert_eq!(op.body_encoding, Some(BodyEncoding::Text));
    assert_eq!(
        op.input_schema.object()["properties"]["body"]["type"],
        "string"
    );
}

#[test]
fn read_only_and_destructive_follow_the_method() {
    assert!(op("gitea_issue_list_issues").is_read_only());
    assert!(!op("gitea_issue_create_issue").is_read_only());
    assert!(op("gitea_issue_delete").is_destructive());
}

#[test]
fn description_adds_the_openapi_description() {
    let d = op("gitea_repo_compare_diff").description;
    assert!(
        d.starts_with("Get commit comparison information\n\nBy default returns JSON"),
        "{d}"
    );
    assert_eq!(
        op("gitea_get_version").description,
        "Returns the version of the Gitea application"
    );
    assert!(
        op("gitea_create_org_repo_deprecated")
            .description
            .starts_with("Deprecated. ")
    );
}

#[test]
fn toolsets_are_tags_and_areas() {
    let op = op("gitea_repo_list_pull_requests");
    assert_eq!(op.toolset, "repository.collaboration");
    assert_eq!(
        op.toolsets,
        ["repository.collaboration", "repository.pulls"]
    );
    let names = Catalog::bundled().toolset_names();
    assert!(names.is_sorted());
    for tag in [
        "admin",
        "issue",
        "miscellaneous",
        "notification",
        "organization",
        "package",
        "repository.code",
        "repository.collaboration",
        "repository.manage",
        "repository.actions",
        "settings",
        "user",
    ] {
        assert!(names.iter().any(|n| n == tag), "{tag}");
    }
    // Too big to name: split into the groups above.
    assert!(!names.iter().any(|n| n == "repository"));
    println!("{} toolsets", names.len());
}

#[test]
fn every_toolset_fits_a_clients_tool_limit() {
    let catalog = Catalog::bundled();
    for name in catalog.toolset_names() {
        let count = catalog
            .operations()
            .iter()
            .filter(|op| op.toolsets.contains(&name))
            .count();
        assert!(
            count <= crate::catalog::toolsets::MAX_TOOLSET_OPERATIONS,
            "{name}: {count} operations"
        );
    }
}

#[test]
fn every_area_of_a_split_tag_is_in_a_named_group() {
    use crate::catalog::toolsets::{SPLIT_TAGS, route_area};
    for split in SPLIT_TAGS {
        for op in Catalog::bundled().operations() {
            let area = route_area(&op.route);
            if op
                .toolsets
                .iter()
                .any(|t| t == &format!("{}.{area}", split.tag))
            {
                assert!(
                    split
                        .groups
                        .iter()
                        .any(|(_, areas)| areas.contains(&area.as_str())),
                    "{}: area {area} is in no group",
                    op.tool_name
                );
            }
        }
    }
}

#[test]
fn arguments_are_validated_by_the_schema() {
    let validator = jsonschema::draft202012::new(&schema("gitea_issue_create_issue")).unwrap();
    let valid =
        json!({"owner": "o", "repo": "r", "body": {"title": "t", "labels": [1]}, "view": "full"});
    assert!(validator.is_valid(&valid));
    let unknown = json!({"owner": "o", "repo": "r", "body": {"title": "t"}, "colour": "red"});
    assert!(!validator.is_valid(&unknown));
    let wrong_type = json!({"owner": "o", "repo": 7, "body": {"title": "t"}});
    assert!(!validator.is_valid(&wrong_type));
    let sudo = json!({"owner": "o", "repo": "r", "body": {"title": "t"}, "sudo": "alice"});
    assert!(
        !validator.is_valid(&sudo),
        "sudo is no schema's: mcp::caller"
    );
    let bad_view = json!({"owner": "o", "repo": "r", "body": {"title": "t"}, "view": "tiny"});
    assert!(!validator.is_valid(&bad_view));
}

#[test]
fn header_params_are_never_exposed() {
    let doc = synthetic(
        "/things",
        json!({
            "operationId": "createThing",
            "parameters": [
                {"name": "X-Secret", "in": "header", "type": "string", "required": true},
                {"name": "q", "in": "query", "type": "string"}
            ]
        }),
    );
    let catalog = Catalog::from_openapi(&doc).unwrap();
    let op = catalog.get("gitea_create_thing").unwrap();
    assert_eq!(op.params.len(), 1);
    assert!(
        op.input_schema.object()["properties"]
            .get("X-Secret")
            .is_none()
    );
    assert!(op.input_schema.object().get("required").is_none());
}

#[test]
fn body_becomes_request_body_when_a_param_is_named_body() {
    let doc = synthetic(
        "/things",
        json!({
            "operationId": "createThing",
            "parameters": [
                {"name": "body", "in": "query", "type": "string", "required": true},
                {"name": "payload", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Opt"}}
            ]
        }),
    );
    let catalog = Catalog::from_openapi(&doc).unwrap();
    let op = catalog.get("gitea_create_thing").unwrap();
    assert_eq!(op.body_param().unwrap().name, ALTERNATE_BODY_PROPERTY);
    assert_eq!(op.param("body").unwrap().location, ParamLocation::Query);
    // `Opt` is used once, so it is written in place.
    assert!(op.input_schema.object()["properties"]["request_body"].is_object());
    assert_eq!(
        op.input_schema.object()["required"],
        json!(["body", "request_body"])
    );
}

#[test]
fn an_own_sudo_param_yields_to_the_gateways() {
    let doc = synthetic(
        "/things",
        json!({
            "operationId": "createThing",
            "parameters": [{"name": "sudo", "in": "query", "type": "integer", "required": true}]
        }),
    );
    let catalog = Catalog::from_openapi(&doc).unwrap();
    let op = catalog.get("gitea_create_thing").unwrap();
    assert!(op.params.is_empty());
    assert!(op.input_schema.object()["properties"].get("sudo").is_none());
}

#[test]
fn referenced_parameters_and_path_level_parameters_are_resolved() {
    let mut doc = synthetic(
        "/things/{id}",
        json!({
            "operationId": "createThing",
            "parameters": [{"$ref": "#/parameters/Limit"}]
        }),
    );
    doc["parameters"] = json!({"Limit": {"name": "limit", "in": "query", "type": "integer"}});
    doc["paths"]["/things/{id}"]["parameters"] =
        json!([{"name": "id", "in": "path", "type": "integer", "required": true}]);
    let catalog = Catalog::from_openapi(&doc).unwrap();
    let op = catalog.get("gitea_create_thing").unwrap();
    let names: Vec<&str> = op.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["id", "limit"]);
}

#[test]
fn unconvertible_operations_are_skipped_and_counted() {
    let doc = json!({
        "swagger": "2.0",
        "info": {"version": "9"},
        "paths": {
            "/a": {"get": {"operationId": "getA"}, "put": {"summary": "no id"}},
            "/b": {"get": {"operationId": "get_a"}},
            "/c/{x}": {"get": {"operationId": "getC"}},
            "/d": {"post": {"operationId": "postD", "parameters": [
                {"name": "b", "in": "body", "schema": {"$ref": "#/definitions/Missing"}}
            ]}}
        }
    });
    let catalog = Catalog::from_openapi(&doc).unwrap();
    assert_eq!(catalog.len(), 1);
    assert_eq!(catalog.skipped(), 4);
    let reasons: Vec<&SkipReason> = catalog
        .skipped_operations()
        .iter()
        .map(|s| &s.reason)
        .collect();
    assert_eq!(reasons[0], &SkipReason::MissingOperationId);
    assert_eq!(
        reasons[1],
        &SkipReason::DuplicateToolName("gitea_get_a".into())
    );
    assert!(matches!(reasons[2], SkipReason::PathParams(p) if p == "x"));
    assert!(matches!(reasons[3], SkipReason::UnresolvableRef(_)));
}

#[test]
fn documents_that_are_not_swagger_2_with_paths_are_errors() {
    assert!(matches!(
        Catalog::from_openapi(&json!({"openapi": "3.0.0", "paths": {}})),
        Err(CatalogError::NotSwagger2 { .. })
    ));
    assert_eq!(
        Catalog::from_openapi(&json!({"swagger": "2.0", "paths": {}})).unwrap_err(),
        CatalogError::NoPaths
    );
    assert_eq!(
        Catalog::from_openapi(&json!({"swagger": "2.0", "paths": {"/a": {"get": {}}}}))
            .unwrap_err(),
        CatalogError::NoOperations { skipped: 1 }
    );
}

/// Prints the build time in the profile the tests run in (unoptimized by
/// default); `cargo bench --bench catalog` gives the optimized figure.
#[test]
fn build_time_of_the_bundled_catalog() {
    let doc: Value = serde_json::from_str(BUNDLED_OPENAPI).unwrap();
    let start = std::time::Instant::now();
    let catalog = std::hint::black_box(Catalog::from_openapi(&doc).unwrap());
    println!(
        "Catalog::from_openapi: {:?} ({} tools)",
        start.elapsed(),
        catalog.len()
    );
}
