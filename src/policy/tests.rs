//! The policy as a specification: the file's checks, and what rules leave
//! of a surface for given facts.

use super::file::Known;
use super::*;

fn known() -> Known<'static> {
    Known {
        toolset: &|t: &str| ["issue", "admin", "repository", "raw"].contains(&t),
        tool: &|t: &str| ["gitea_repo_delete", "gitea_issue_create_issue"].contains(&t),
        url: &|u: &str| {
            ["/mcp", "/mcp/readonly", "/mcp/all"]
                .contains(&u)
                .then(|| u.to_owned())
        },
    }
}

fn policy(text: &str) -> Policy {
    parse_policy("policy.toml", text, &known()).unwrap()
}

fn problem(text: &str) -> PolicyError {
    parse_policy("policy.toml", text, &known()).unwrap_err()
}

/// The three sentences of `docs/policy.md`.
const EXAMPLE: &str = r#"
[[rule]]
id = "connectors-read-only"
description = "Hosted connectors only read, except for the platform team."
when = { redirect_hosts = ["claude.ai", "chat.mistral.ai"] }
unless = { teams = ["acme/platform"] }
read_only = true

[[rule]]
id = "no-admin-toolset"
deny_toolsets = ["admin"]

[[rule]]
id = "le-chat-issues-only"
when = { client_names = ["Le Chat"] }
toolsets = ["issue"]
"#;

fn facts(redirect_host: &str, client_name: &str, teams: &[&str]) -> Facts {
    Facts {
        login: "alice".into(),
        person: PersonFacts {
            site_admin: false,
            orgs: vec!["acme".into()],
            teams: teams.iter().map(|t| (*t).to_owned()).collect(),
        },
        client: ClientFacts {
            client_id: "c1".into(),
            client_name: Some(client_name.into()),
            redirect_hosts: vec![redirect_host.into()],
            used_redirect_host: Some(redirect_host.into()),
        },
        url: "/mcp".into(),
    }
}

#[test]
fn a_connector_reads_only_unless_its_person_is_in_the_platform_team() {
    let p = policy(EXAMPLE);
    let outside = p.narrowing_for(&facts("claude.ai", "Claude", &[])).unwrap();
    assert!(outside.read_only);
    assert_eq!(outside.rules, ["connectors-read-only", "no-admin-toolset"]);
    let platform = p
        .narrowing_for(&facts("claude.ai", "Claude", &["ACME/Platform"]))
        .unwrap();
    assert!(!platform.read_only);
    assert_eq!(platform.rules, ["no-admin-toolset"]);
}

#[test]
fn a_rule_without_when_holds_for_everyone_site_admins_too() {
    let p = policy(EXAMPLE);
    let mut admin = facts("localhost", "Claude Code", &[]);
    admin.person.site_admin = true;
    let n = p.narrowing_for(&admin).unwrap();
    assert!(n.deny_toolsets.contains("admin"));
    assert!(!n.keeps("gitea_admin_search_users", &["admin".into()], true));
}

#[test]
fn a_client_rule_narrows_to_its_toolsets_and_deny_wins_over_allow() {
    let p = policy(
        r#"
[[rule]]
id = "le-chat-issues-only"
when = { client_names = ["le chat"] }
toolsets = ["issue", "admin"]

[[rule]]
id = "no-admin-toolset"
deny_toolsets = ["admin"]

[[rule]]
id = "no-repo-deletion"
deny_tools = ["gitea_repo_delete"]
toolsets = ["issue", "repository"]
"#,
    );
    let n = p
        .narrowing_for(&facts("chat.mistral.ai", "Le Chat", &[]))
        .unwrap();
    // Allowed toolsets intersect; a denied toolset stays denied.
    assert_eq!(
        n.toolsets.clone().unwrap().into_iter().collect::<Vec<_>>(),
        ["issue"]
    );
    assert!(n.keeps("gitea_issue_list_issues", &["issue".into()], true));
    assert!(!n.keeps("gitea_admin_search_users", &["admin".into()], true));
    assert!(!n.keeps("gitea_repo_get", &["repository".into()], true));
    // Another client: only the rules without a client condition.
    let other = p.narrowing_for(&facts("claude.ai", "Claude", &[])).unwrap();
    assert_eq!(other.rules, ["no-admin-toolset", "no-repo-deletion"]);
    assert!(!other.keeps("gitea_repo_delete", &["repository".into()], false));
}

#[test]
fn no_rule_applying_leaves_the_surface_alone() {
    let p = policy(
        r#"
[[rule]]
id = "bob"
when = { logins = ["bob"] }
read_only = true
"#,
    );
    assert_eq!(p.narrowing_for(&facts("claude.ai", "Claude", &[])), None);
    assert_eq!(Policy::default().narrowing_for(&Facts::default()), None);
}

#[test]
fn conditions_on_one_field_are_or_and_across_fields_and() {
    let p = policy(
        r#"
[[rule]]
id = "r"
when = { logins = ["bob", "alice"], urls = ["/mcp/all"] }
read_only = true
"#,
    );
    let mut f = facts("claude.ai", "Claude", &[]);
    assert_eq!(p.narrowing_for(&f), None, "alice at /mcp");
    f.url = "/mcp/all".into();
    assert!(p.narrowing_for(&f).unwrap().read_only, "alice at /mcp/all");
}

#[test]
fn only_the_facts_some_rule_asks_about_are_needed() {
    assert_eq!(
        policy(EXAMPLE).needs(),
        Needs {
            memberships: true,
            site_admin: false
        }
    );
    let admins = policy("[[rule]]\nid = \"a\"\nwhen = { site_admin = true }\nread_only = true\n");
    assert_eq!(
        admins.needs(),
        Needs {
            memberships: false,
            site_admin: true
        }
    );
}

#[test]
fn an_unknown_toolset_names_its_line_and_column() {
    let e = problem("[[rule]]\nid = \"x\"\n\ntoolsets = [\"issue\", \"wiki\"]\n");
    assert_eq!((e.line, e.column), (4, 22), "{e}");
    assert_eq!(e.message, "rule `x`: unknown toolset `wiki`");
    assert_eq!(
        e.to_string(),
        "policy.toml:4:22: rule `x`: unknown toolset `wiki`"
    );
}

#[test]
fn an_unknown_tool_a_bad_url_and_a_bad_team_are_refused() {
    let e = problem("[[rule]]\nid = \"x\"\ndeny_tools = [\"gitea_nope\"]\n");
    assert_eq!(
        (e.line, e.message.as_str()),
        (3, "rule `x`: unknown tool `gitea_nope`")
    );
    let e = problem("[[rule]]\nid = \"x\"\nwhen = { urls = [\"/elsewhere\"] }\nread_only = true\n");
    assert_eq!(e.line, 3);
    assert!(e.message.contains("not an MCP URL path"), "{e}");
    let e =
        problem("[[rule]]\nid = \"x\"\nunless = { teams = [\"platform\"] }\nread_only = true\n");
    assert!(e.message.contains("`org/team`"), "{e}");
}

#[test]
fn unknown_keys_are_refused_not_ignored() {
    let e = problem("[[rule]]\nid = \"x\"\nreadonly = true\n");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("readonly"), "{e}");
    let e = problem("[[rule]]\nid = \"x\"\nwhen = { login = [\"a\"] }\nread_only = true\n");
    assert!(e.message.contains("login"), "{e}");
}

#[test]
fn ids_are_unique_well_formed_and_every_rule_narrows_something() {
    let e =
        problem("[[rule]]\nid = \"a\"\nread_only = true\n[[rule]]\nid = \"a\"\nread_only = true\n");
    assert_eq!(
        (e.line, e.message.as_str()),
        (5, "rule id `a` is used twice")
    );
    let e = problem("[[rule]]\nid = \"A B\"\nread_only = true\n");
    assert!(e.message.contains("must be 1 to 64"), "{e}");
    let e = problem("[[rule]]\nid = \"idle\"\nwhen = { logins = [\"a\"] }\n");
    assert!(e.message.contains("narrows nothing"), "{e}");
}

#[test]
fn text_that_is_not_toml_names_where() {
    let e = problem("[[rule]]\nid = \"x\nread_only = true\n");
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn an_empty_file_is_a_policy_without_rules() {
    assert_eq!(policy(""), Policy::default());
}

#[test]
fn before_sign_in_only_rules_about_the_client_and_url_are_certain() {
    let p = policy(EXAMPLE);
    let client = |host: &str, name: &str| ClientFacts {
        client_id: "c".into(),
        client_name: Some(name.into()),
        redirect_hosts: vec![host.into()],
        used_redirect_host: Some(host.into()),
    };
    // Le Chat: its own rule and the rule for everyone are certain; the
    // connector rule asks about teams, so it may still apply.
    let (certain, more) = p.before_sign_in(&client("chat.mistral.ai", "Le Chat"), "/mcp");
    let certain = certain.unwrap();
    assert_eq!(certain.rules, ["no-admin-toolset", "le-chat-issues-only"]);
    assert!(more);
    // A desktop client: only the rule for everyone; no rule about the
    // person could apply.
    let (certain, more) = p.before_sign_in(&client("127.0.0.1", "Claude Code"), "/mcp");
    assert_eq!(certain.unwrap().rules, ["no-admin-toolset"]);
    assert!(!more);
}

#[test]
fn a_narrowing_is_described_in_words() {
    let p = policy(EXAMPLE);
    let n = p
        .narrowing_for(&facts("chat.mistral.ai", "Le Chat", &[]))
        .unwrap();
    assert_eq!(
        describe(&n),
        "read only; only the toolsets issue; not the toolsets admin"
    );
}

const TRUSTED_HOSTS_ONLY_WRITE: &str = r#"
[[rule]]
id = "writes-only-from-trusted-hosts"
unless = { redirect_hosts = ["trusted.example"] }
read_only = true
"#;

/// A client registered with the trusted URI and one of its own, whose
/// sign-in used `used` (`None`: a grant from before the URI was kept).
fn two_uri_client(used: Option<&str>) -> Facts {
    Facts {
        client: ClientFacts {
            client_id: "c".into(),
            client_name: None,
            redirect_hosts: vec!["trusted.example".into(), "evil.example".into()],
            used_redirect_host: used.map(str::to_owned),
        },
        ..facts("x", "x", &[])
    }
}

/// The red team's F3: a self-registered client listed the trusted URI and
/// its own, took its code at its own, and escaped the rule. The rule now
/// holds for the redirect URI the grant used.
#[test]
fn a_rule_about_redirect_hosts_holds_for_the_uri_the_grant_used() {
    let p = policy(TRUSTED_HOSTS_ONLY_WRITE);
    let escaped = p.narrowing_for(&two_uri_client(Some("evil.example")));
    assert!(escaped.is_some_and(|n| n.read_only), "the rule applies");
    assert!(
        p.narrowing_for(&two_uri_client(Some("trusted.example")))
            .is_none()
    );
}

/// A grant from before the URI was kept: an `unless` about hosts holds
/// only when every registered URI is on the list, a `when` when any is.
#[test]
fn without_the_used_uri_hosts_are_read_the_cautious_way() {
    let p = policy(TRUSTED_HOSTS_ONLY_WRITE);
    assert!(
        p.narrowing_for(&two_uri_client(None))
            .is_some_and(|n| n.read_only)
    );
    let connectors = policy(EXAMPLE);
    let mut legacy = two_uri_client(None);
    legacy.client.redirect_hosts = vec!["claude.ai".into(), "elsewhere.example".into()];
    assert!(
        connectors
            .narrowing_for(&legacy)
            .is_some_and(|n| n.read_only)
    );
}

/// The red team's F7: `127.0.0.1`, `localhost` and `[::1]` are the same
/// machine (RFC 8252): a rule naming one holds for the others.
#[test]
fn loopback_hosts_compare_as_one() {
    let p = policy(
        r#"
[[rule]]
id = "local-clients-read-only"
when = { redirect_hosts = ["127.0.0.1"] }
read_only = true
"#,
    );
    for host in ["127.0.0.1", "localhost", "[::1]", "::1", "LOCALHOST"] {
        assert!(p.narrowing_for(&facts(host, "x", &[])).is_some(), "{host}");
    }
    assert!(p.narrowing_for(&facts("example.com", "x", &[])).is_none());
}
