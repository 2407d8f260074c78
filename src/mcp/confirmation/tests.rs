//! Which calls need their person, and what binds an approval to a call.

use super::*;
use crate::catalog::Catalog;
use crate::config::ConfirmElicitation;
use crate::gitea::raw::RAW_TOOL_NAME;
use crate::mcp::discover::CALL_WRITE_TOOL_NAME;
use crate::surface::Narrowing;
use serde_json::Map;

fn rules(mode: ConfirmMode, always: &[&str], never: &[&str]) -> ConfirmationRules {
    let list = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect();
    ConfirmationRules::new(ConfirmSettings {
        mode,
        always: list(always),
        never: list(never),
        admin: ConfirmMode::Off,
        elicitation: ConfirmElicitation::Form,
    })
}

fn op<'a>(catalog: &'a Catalog, name: &str) -> &'a Operation {
    catalog.get(name).unwrap_or_else(|| panic!("{name}"))
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[test]
fn by_default_destructive_calls_need_their_person() {
    let catalog = Catalog::bundled();
    let r = rules(ConfirmMode::Destructive, &[], &[]);
    let s = Surface::default();
    let delete = op(&catalog, "gitea_repo_delete_branch");
    assert!(r.needs(&delete.tool_name, Some(delete), delete.effect, &s));
    let create = op(&catalog, "gitea_issue_create_issue");
    assert!(!r.needs(&create.tool_name, Some(create), create.effect, &s));
    // The write call tool running a delete, and the raw tool writing
    // (admission counts every raw write as destructive).
    assert!(r.needs(CALL_WRITE_TOOL_NAME, Some(delete), delete.effect, &s));
    assert!(r.needs(RAW_TOOL_NAME, None, Effect::Destructive, &s));
    assert!(!r.needs(RAW_TOOL_NAME, None, Effect::Read, &s));
}

#[test]
fn a_deprecated_operation_waits_when_its_twin_is_named() {
    let catalog = Catalog::bundled();
    let s = Surface::default();
    let old = op(&catalog, "gitea_issue_delete_comment_deprecated");
    let off = rules(ConfirmMode::Off, &["gitea_issue_delete_comment"], &[]);
    assert!(off.needs(&old.tool_name, Some(old), old.effect, &s));
    assert!(off.needs(RAW_TOOL_NAME, Some(old), Effect::Destructive, &s));
    let by_policy = Surface {
        narrowing: Some(std::sync::Arc::new(Narrowing {
            confirm_tools: ["gitea_issue_delete_comment".to_owned()].into(),
            ..Narrowing::default()
        })),
        ..Surface::default()
    };
    let none = rules(ConfirmMode::Off, &[], &[]);
    assert!(none.needs(CALL_WRITE_TOOL_NAME, Some(old), old.effect, &by_policy));
}

#[test]
fn writes_mode_asks_for_every_change_and_off_for_none() {
    let catalog = Catalog::bundled();
    let s = Surface::default();
    let create = op(&catalog, "gitea_issue_create_issue");
    let read = op(&catalog, "gitea_issue_list_issues");
    let writes = rules(ConfirmMode::Writes, &[], &[]);
    assert!(writes.needs(&create.tool_name, Some(create), create.effect, &s));
    assert!(!writes.needs(&read.tool_name, Some(read), read.effect, &s));
    let delete = op(&catalog, "gitea_repo_delete_branch");
    let off = rules(ConfirmMode::Off, &[], &[]);
    assert!(!off.needs(&delete.tool_name, Some(delete), delete.effect, &s));
}

#[test]
fn per_tool_settings_and_the_policy_add_and_remove() {
    let catalog = Catalog::bundled();
    let create = op(&catalog, "gitea_issue_create_issue");
    let delete = op(&catalog, "gitea_repo_delete_branch");
    let r = rules(
        ConfirmMode::Destructive,
        &["gitea_issue_create_issue"],
        &["gitea_repo_delete_branch"],
    );
    let plain = Surface::default();
    assert!(r.needs(&create.tool_name, Some(create), create.effect, &plain));
    assert!(!r.needs(&delete.tool_name, Some(delete), delete.effect, &plain));
    // The policy's confirmations hold whatever the skip list says.
    let narrowed = Surface {
        narrowing: Some(Arc::new(Narrowing {
            confirm_tools: ["gitea_repo_delete_branch".to_owned()].into(),
            rules: vec!["r".into()],
            ..Narrowing::default()
        })),
        ..Surface::default()
    };
    assert!(r.needs(&delete.tool_name, Some(delete), delete.effect, &narrowed));
    assert!(r.needs(CALL_WRITE_TOOL_NAME, Some(delete), delete.effect, &narrowed));
}

#[test]
fn the_page_shows_values_but_not_secret_looking_ones() {
    let shown = shown_arguments(&args(json!({
        "owner": "acme",
        "body": {"password": "hunter2", "title": "x".repeat(600)},
        "token": "abc"
    })));
    assert!(shown.contains("\"owner\": \"acme\""), "{shown}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("\"abc\""),
        "{shown}"
    );
    assert!(shown.contains('…'), "{shown}");
}

#[test]
fn the_summary_names_the_operation_and_its_path_values() {
    let catalog = Catalog::bundled();
    let delete = op(&catalog, "gitea_repo_delete_branch");
    let text = summary(
        Some(delete),
        &delete.route,
        &args(json!({"owner": "acme", "repo": "widgets", "branch": "feature/x"})),
    );
    assert!(
        text.ends_with("(owner: acme, repo: widgets, branch: feature/x)"),
        "{text}"
    );
    assert_eq!(summary(None, "/x", &Map::new()), "Call the Gitea API");
}

#[test]
fn deleting_a_repository_organisation_user_or_team_asks_for_its_name() {
    let catalog = Catalog::bundled();
    let named = |tool: &str, a: Value| typed_name(Some(op(&catalog, tool)), &args(a));
    assert_eq!(
        named(
            "gitea_repo_delete",
            json!({"owner": "acme", "repo": "widgets"})
        )
        .as_deref(),
        Some("acme/widgets")
    );
    assert_eq!(
        named("gitea_org_delete", json!({"org": "acme"})).as_deref(),
        Some("acme")
    );
    assert_eq!(
        named(
            "gitea_repo_delete_branch",
            json!({"owner": "a", "repo": "b", "branch": "c"})
        ),
        None
    );
}

#[test]
fn only_the_exact_name_or_an_explicit_approval_approves() {
    let (message, schema) = elicitation_form("Delete a repository", Some("acme/widgets"));
    assert!(message.contains("type acme/widgets"), "{message}");
    assert_eq!(schema["required"], json!(["name"]));
    let typed = Some("acme/widgets");
    assert!(elicitation_approves(
        typed,
        Some(&json!({"name": "acme/widgets"}))
    ));
    assert!(!elicitation_approves(
        typed,
        Some(&json!({"name": "acme/widget"}))
    ));
    assert!(!elicitation_approves(typed, None));
    assert!(elicitation_approves(None, Some(&json!({"approve": true}))));
    assert!(!elicitation_approves(
        None,
        Some(&json!({"approve": "true"}))
    ));
    assert!(!elicitation_approves(None, Some(&json!({}))));
}
