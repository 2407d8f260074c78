//! Live catalog: the tools built from the instance's own OpenAPI document
//! against the bundled ones.

use std::collections::{BTreeMap, BTreeSet};

use aegis_gitea_mcp::catalog::tool_name_for_operation_id;

use crate::fixture::Fixture;
use crate::gateway::LiveGateway;

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn live_catalog_matches_the_instance() {
    let fx = Fixture::load();
    // `live-strict`: the instance's own document, or the gateway does not start.
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[("GITEA_OPENAPI", "live-strict")]).await;
    let live_tools = gw.client().await.list_all_tools().await.unwrap();
    let bundled_gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let bundled_tools = bundled_gw.client().await.list_all_tools().await.unwrap();
    let by_name = |tools: &[rmcp::model::Tool]| -> BTreeMap<String, rmcp::model::Tool> {
        tools
            .iter()
            .map(|t| (t.name.to_string(), t.clone()))
            .collect()
    };
    let (live_map, bundled_map) = (by_name(&live_tools), by_name(&bundled_tools));
    let live: BTreeSet<String> = live_map.keys().cloned().collect();
    let bundled: BTreeSet<String> = bundled_map.keys().cloned().collect();
    assert!(!live.is_empty(), "the live catalog lists no tool");

    let only_live: Vec<&String> = live.difference(&bundled).collect();
    let only_bundled: Vec<&String> = bundled.difference(&live).collect();
    // Tools in both whose schema or description differ (informational).
    let (mut schema_differs, mut description_differs) = (Vec::new(), Vec::new());
    for (name, tool) in &live_map {
        let Some(other) = bundled_map.get(name) else {
            continue;
        };
        if tool.input_schema != other.input_schema {
            schema_differs.push(name.as_str());
        }
        if tool.description != other.description {
            description_differs.push(name.as_str());
        }
    }
    println!(
        "live tools: {}, bundled tools: {}\nonly live ({}): {only_live:?}\n\
         only bundled ({}): {only_bundled:?}\n\
         same name, other input schema ({}): {schema_differs:?}\n\
         same name, other description ({}): {description_differs:?}",
        live.len(),
        bundled.len(),
        only_live.len(),
        only_bundled.len(),
        schema_differs.len(),
        description_differs.len(),
    );

    // Gitea 1.27.1 lacks the reparent routes the bundled document has; their
    // absence also proves the live document was used, not the fallback.
    let reparent: BTreeSet<String> = ["repoReparent", "acceptRepoReparent", "rejectRepoReparent"]
        .into_iter()
        .map(tool_name_for_operation_id)
        .collect();
    for name in &reparent {
        assert!(bundled.contains(name), "{name} not in the bundled catalog");
        assert!(
            !live.contains(name),
            "{name} is served by the live instance"
        );
    }
    assert!(
        only_live.is_empty(),
        "tools only in the live catalog: {only_live:?}"
    );
    assert_eq!(
        only_bundled
            .iter()
            .map(|s| s.as_str())
            .collect::<BTreeSet<_>>(),
        reparent.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        "unexpected tools only in the bundled catalog"
    );
}
