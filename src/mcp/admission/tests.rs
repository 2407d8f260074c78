//! Admission as a table, in kanidm's style: one row per tool or raw
//! request, with what it is admitted as (its target and effect) or why it
//! is refused. No socket, no clock: admission is pure.

use serde_json::{Map, Value, json};

use super::*;
use crate::catalog::Effect;
use crate::config::{Settings, SettingsSource};
use crate::identity::{Access, IdentityMode};
use crate::mcp::discover::CALL_WRITE_TOOL_NAME;

fn admission(extra: &[(&str, &str)]) -> Admission {
    let mut pairs = vec![
        ("GITEA_URL", "http://127.0.0.1:9"),
        (
            "TOKEN_ENCRYPTION_KEY",
            "admission-tests-key-0123456789abcdef0123",
        ),
    ];
    pairs.extend_from_slice(extra);
    let settings = Settings::from_source(&SettingsSource::from_pairs(pairs)).unwrap();
    Admission::new(Catalog::bundled(), Exposure::new(settings.exposure.clone()))
}

fn surface(admission: &Admission, path: &str) -> Surface {
    Surface::parse(path, crate::surface::catalog_toolsets(admission.catalog())).unwrap()
}

/// What a row expects.
#[derive(Debug, PartialEq)]
enum Admitted {
    /// Admitted: the target's kind, the operation it runs, its effect.
    As(&'static str, Option<&'static str>, Effect),
    /// Refused, named as the refusal's entry names it.
    Refused(&'static str),
}

fn admitted_as(result: Result<AdmittedCall<'_>, CallRefusal>) -> Admitted {
    match result {
        Ok(call) => {
            let kind = match call.target() {
                Target::Operation(_) => "operation",
                Target::Named(_) => "named",
                Target::Raw { .. } => "raw",
                Target::Search => "search",
            };
            // Leaked: a row's expectation is a `&'static str`.
            let operation = call
                .operation()
                .map(|op| &*Box::leak(op.tool_name.clone().into_boxed_str()));
            Admitted::As(kind, operation, call.effect())
        }
        Err(CallRefusal::UnknownTool) => Admitted::Refused("unknown_tool"),
        Err(CallRefusal::ReadOnlyGrant) => Admitted::Refused("insufficient_scope"),
        Err(CallRefusal::Error(err)) => Admitted::Refused(err.kind.as_str()),
    }
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

const READ: Access = Access::Read;
const WRITE: Access = Access::ReadWrite;

/// One row: a tool, its arguments, the grant's access, what it is
/// admitted as.
type Row = (&'static str, Value, Access, Admitted);

/// Admits each row, on `/mcp/all` (which lists every operation) or, for
/// the call tools and the search, on `/mcp` (which lists them).
fn check(rows: Vec<Row>) {
    let a = admission(&[]);
    let all = surface(&a, "/mcp/all");
    let default = Surface::default();
    for (tool, arguments, access, expected) in rows {
        let at = if tool.starts_with("gitea_call_") || tool == "gitea_search_operations" {
            &default
        } else {
            &all
        };
        let caller = (Caller::of(IdentityMode::Oauth), access);
        let result = a.admit(at, caller, tool, args(arguments.clone()));
        let admitted = admitted_as(result);
        assert_eq!(admitted, expected, "{tool} {arguments} ({access:?})");
    }
}

#[test]
fn typed_tools_run_their_operation_and_writes_need_a_grant_that_writes() {
    use Admitted::{As, Refused};
    use Effect::{Additive, Destructive, Read};
    let repo = json!({"owner": "acme", "repo": "widgets"});
    let branch = json!({"owner": "acme", "repo": "widgets", "branch": "x"});
    let issue = json!({"owner": "acme", "repo": "widgets", "body": {"title": "t"}});
    check(vec![
        // A typed tool runs its own operation.
        (
            "gitea_issue_list_issues",
            repo.clone(),
            READ,
            As("operation", Some("gitea_issue_list_issues"), Read),
        ),
        (
            "gitea_issue_create_issue",
            issue.clone(),
            WRITE,
            As("operation", Some("gitea_issue_create_issue"), Additive),
        ),
        (
            "gitea_repo_delete_branch",
            branch.clone(),
            WRITE,
            As("operation", Some("gitea_repo_delete_branch"), Destructive),
        ),
        // A write from a grant that only reads; a read from it passes.
        (
            "gitea_issue_create_issue",
            issue.clone(),
            READ,
            Refused("insufficient_scope"),
        ),
        (
            "gitea_repo_delete_branch",
            branch.clone(),
            READ,
            Refused("insufficient_scope"),
        ),
    ]);
}

#[test]
fn call_tools_run_the_operation_they_name_judged_as_it() {
    use Admitted::{As, Refused};
    use Effect::{Destructive, Read};
    let repo = json!({"owner": "acme", "repo": "widgets"});
    let branch = json!({"owner": "acme", "repo": "widgets", "branch": "x"});
    check(vec![
        // The call tools run the operation they name, judged by it.
        (
            "gitea_call_read_operation",
            json!({"name": "gitea_repo_get", "arguments": repo}),
            READ,
            As("named", Some("gitea_repo_get"), Read),
        ),
        (
            CALL_WRITE_TOOL_NAME,
            json!({"name": "gitea_repo_delete_branch", "arguments": branch}),
            WRITE,
            As("named", Some("gitea_repo_delete_branch"), Destructive),
        ),
        (
            CALL_WRITE_TOOL_NAME,
            json!({"name": "gitea_repo_delete_branch", "arguments": branch}),
            READ,
            Refused("insufficient_scope"),
        ),
        // Each call tool runs only its kind of operation.
        (
            CALL_WRITE_TOOL_NAME,
            json!({"name": "gitea_repo_get", "arguments": repo}),
            WRITE,
            Refused("invalid_arguments"),
        ),
        (
            "gitea_call_read_operation",
            json!({"name": "gitea_repo_delete_branch", "arguments": branch}),
            WRITE,
            Refused("invalid_arguments"),
        ),
        (
            "gitea_call_read_operation",
            json!({"name": "gitea_no_such_thing"}),
            READ,
            Refused("invalid_arguments"),
        ),
    ]);
}

#[test]
fn the_raw_tool_reads_with_get_and_head_and_any_other_method_is_destructive() {
    use Admitted::{As, Refused};
    use Effect::{Destructive, Read};
    check(vec![
        // The raw tool: a read reads; every write is destructive, whatever
        // it reaches (fail closed), and its route names the operation.
        (
            "gitea_api_request",
            json!({"method": "GET", "path": "/repos/acme/widgets"}),
            READ,
            As("raw", Some("gitea_repo_get"), Read),
        ),
        (
            "gitea_api_request",
            json!({"method": "HEAD", "path": "/version"}),
            READ,
            As("raw", Some("gitea_get_version"), Read),
        ),
        (
            "gitea_api_request",
            json!({"method": "post", "path": "/repos/acme/widgets/issues", "body": {"title": "t"}}),
            WRITE,
            As("raw", Some("gitea_issue_create_issue"), Destructive),
        ),
        (
            "gitea_api_request",
            json!({"method": "POST", "path": "/repos/acme/widgets/issues"}),
            READ,
            Refused("insufficient_scope"),
        ),
        (
            "gitea_api_request",
            json!({"method": "GET", "path": "/admin/users"}),
            READ,
            Refused("sensitive_path"),
        ),
    ]);
}

#[test]
fn searches_read_and_unknown_tools_or_unfitting_arguments_are_refused() {
    use Admitted::{As, Refused};
    use Effect::Read;
    check(vec![
        // The search reads the catalog.
        (
            "gitea_search_operations",
            json!({"query": "delete a branch"}),
            READ,
            As("search", None, Read),
        ),
        // What the URL does not list, and arguments that do not fit.
        (
            "gitea_no_such_tool",
            json!({}),
            WRITE,
            Refused("unknown_tool"),
        ),
        (
            "gitea_issue_list_issues",
            json!({"owner": "acme"}),
            READ,
            Refused("invalid_arguments"),
        ),
        (
            "gitea_issue_create_issue",
            json!({"owner": "acme", "repo": "widgets"}),
            READ,
            Refused("invalid_arguments"),
        ),
    ]);
}

#[test]
fn a_toolset_url_admits_only_what_it_lists() {
    let a = admission(&[]);
    let issues = surface(&a, "/mcp/x/issue");
    let caller = (Caller::of(IdentityMode::Oauth), WRITE);
    let listed = a.admit(
        &issues,
        caller,
        "gitea_issue_list_issues",
        args(json!({"owner": "a", "repo": "b"})),
    );
    assert!(listed.is_ok());
    let branch = json!({"owner": "a", "repo": "b", "branch": "x"});
    let unlisted = a.admit(&issues, caller, "gitea_repo_delete_branch", args(branch));
    assert_eq!(admitted_as(unlisted), Admitted::Refused("unknown_tool"));
}

#[test]
fn a_read_only_server_lists_no_write_and_the_raw_tool_only_reads() {
    let a = admission(&[("READ_ONLY", "true")]);
    let all = surface(&a, "/mcp/all");
    let caller = (Caller::of(IdentityMode::Oauth), WRITE);
    let issue = json!({"owner": "a", "repo": "b", "body": {"title": "t"}});
    let write = a.admit(&all, caller, "gitea_issue_create_issue", args(issue));
    assert_eq!(admitted_as(write), Admitted::Refused("unknown_tool"));
    let raw = json!({"method": "DELETE", "path": "/repos/a/b"});
    let raw_write = a.admit(&all, caller, "gitea_api_request", args(raw));
    assert_eq!(
        admitted_as(raw_write),
        Admitted::Refused("invalid_arguments")
    );
}

#[test]
fn the_audit_description_names_the_operation_run_and_argument_names_only() {
    let a = admission(&[]);
    let all = surface(&a, "/mcp/all");
    let caller = (Caller::of(IdentityMode::Oauth), WRITE);
    let branch = json!({"owner": "acme", "repo": "widgets", "branch": "x"});
    let named = json!({"name": "gitea_repo_delete_branch", "arguments": branch});
    let call = a
        .admit(
            &Surface::default(),
            caller,
            CALL_WRITE_TOOL_NAME,
            args(named),
        )
        .unwrap();
    let described = call.description();
    assert_eq!(described.method.as_deref(), Some("DELETE"));
    assert_eq!(
        described.route.as_deref(),
        Some("/repos/{owner}/{repo}/branches/{branch}")
    );
    assert_eq!(
        described.operation.as_deref(),
        Some("gitea_repo_delete_branch")
    );
    assert_eq!(described.arg_names, ["owner", "repo", "branch"]);
    assert_eq!(call.operation_args()["branch"], "x");
    let raw = json!({"method": "GET", "path": "/repos/acme/widgets/issues"});
    let call = a
        .admit(&all, caller, "gitea_api_request", args(raw))
        .unwrap();
    let described = call.description();
    assert_eq!(
        described.route.as_deref(),
        Some("/repos/{owner}/{repo}/issues")
    );
    assert_eq!(
        described.operation.as_deref(),
        Some("gitea_api_request:GET:repos")
    );
}

#[test]
fn the_digest_binds_tool_and_arguments_whatever_their_order() {
    let a = args(json!({"owner": "acme", "repo": "w", "branch": "x"}));
    let b = args(json!({"branch": "x", "repo": "w", "owner": "acme"}));
    let digest = ArgsDigest::of;
    assert_eq!(digest("t", &a), digest("t", &b));
    assert_ne!(digest("t", &a), digest("u", &a));
    let other = args(json!({"owner": "acme", "repo": "w", "branch": "y"}));
    assert_ne!(digest("t", &a), digest("t", &other));
    let nested = |x: i64| args(json!({"body": {"a": 1, "b": [x, {"c": 2, "d": 3}]}}));
    assert_ne!(digest("t", &nested(1)), digest("t", &nested(2)));
    assert_eq!(digest("t", &a).as_str().len(), 64);
}

#[test]
fn an_admitted_call_s_digest_is_that_of_its_tool_and_arguments() {
    let a = admission(&[]);
    let all = surface(&a, "/mcp/all");
    let branch = json!({"owner": "acme", "repo": "widgets", "branch": "x"});
    let caller = (Caller::of(IdentityMode::Oauth), WRITE);
    let call = a
        .admit(
            &all,
            caller,
            "gitea_repo_delete_branch",
            args(branch.clone()),
        )
        .unwrap();
    assert_eq!(
        call.digest(),
        &ArgsDigest::of("gitea_repo_delete_branch", &args(branch))
    );
}

#[test]
fn an_admitted_call_shows_argument_names_never_values() {
    let a = admission(&[]);
    let all = surface(&a, "/mcp/all");
    let caller = (Caller::of(IdentityMode::Oauth), WRITE);
    let secret = json!({"owner": "acme", "repo": "widgets", "body": {"title": "planted-7f3a"}});
    let call = a
        .admit(&all, caller, "gitea_issue_create_issue", args(secret))
        .unwrap();
    let shown = format!("{call:?}");
    assert!(shown.contains("gitea_issue_create_issue"), "{shown}");
    assert!(!shown.contains("planted-7f3a"), "{shown}");
}
