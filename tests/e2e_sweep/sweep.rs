//! The sweep: every GET tool of the bundled catalog against the real Gitea,
//! and the premise of its route-miss rule.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use aegis_gitea_mcp::catalog::{Catalog, Operation};
use serde_json::{Map, Value, json};

use crate::classify::{GENERIC_404, Outcome, classify, is_route_miss, raw_answer, sent};
use crate::expected_refusals::EXPECTED_REFUSALS;
use crate::fixture::Fixture;
use crate::gateway::{LiveGateway, call_raw};
use crate::support::call;
use crate::sweep_args::{Known, fill_args};

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn sweep_every_get_tool() {
    let fx = Fixture::load();
    let started = Instant::now();
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let client = gw.client().await;
    let listed: BTreeSet<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let known = Known::discover(&client, &fx).await;

    let catalog = Catalog::bundled();
    let gets: Vec<&Operation> = catalog
        .operations()
        .iter()
        .filter(|op| op.method == http::Method::GET)
        .collect();

    // tool -> (outcome, arguments, GET path sent)
    let mut rows: BTreeMap<String, (Outcome, String, String)> = BTreeMap::new();
    let mut skipped: BTreeMap<String, String> = BTreeMap::new();
    for op in &gets {
        assert!(
            listed.contains(&op.tool_name),
            "{} is not in tools/list",
            op.tool_name
        );
        let args = match fill_args(op, &fx, &known) {
            Ok(args) => args,
            Err(missing) => {
                skipped.insert(op.tool_name.clone(), missing);
                continue;
            }
        };
        let result = call_raw(&client, &op.tool_name, &args).await;
        let outcome = classify(&fx, op, &args, result).await;
        let path = sent(op, &args);
        rows.insert(
            op.tool_name.clone(),
            (outcome, Value::Object(args).to_string(), path),
        );
    }
    let elapsed = started.elapsed();

    // Report.
    let mut report = String::new();
    let mut faults = Vec::new();
    let mut unexpected = Vec::new();
    let mut expected = Vec::new();
    let mut stale = Vec::new();
    let (mut ok, mut refused) = (0, 0);
    report.push_str(&format!(
        "\n{:<52} {:<8} {:>6}  {}\n",
        "tool", "outcome", "status", "GET path  [kind: message | truncation]"
    ));
    for (tool, (outcome, args, path)) in &rows {
        let allowed = EXPECTED_REFUSALS.iter().find(|(t, _, _, _)| t == tool);
        let line = match outcome {
            Outcome::Ok { status, truncation } => {
                ok += 1;
                if let Some((_, st, _, _)) = allowed {
                    stale.push(format!("{tool} (listed for {st}) now answers {status}"));
                }
                match truncation {
                    Some(t) => format!(
                        "{tool:<52} {:<8} {status:>6}  {path}  truncated: {t}\n",
                        "ok"
                    ),
                    None => format!("{tool:<52} {:<8} {status:>6}  {path}\n", "ok"),
                }
            }
            Outcome::Refused {
                status,
                kind,
                message,
            } => {
                refused += 1;
                let entry = format!("{tool} {args} -> {status} {kind}: {message}");
                match allowed {
                    Some((_, st, fragment, reason))
                        if st == status && message.contains(fragment) =>
                    {
                        expected.push(format!("{entry}\n      reason: {reason}"))
                    }
                    _ => unexpected.push(entry),
                }
                format!(
                    "{tool:<52} {:<8} {status:>6}  {path}  {kind}: {message}\n",
                    "refused"
                )
            }
            Outcome::Fault { reason } => {
                faults.push(format!("{tool} {args}: {reason}"));
                format!("{tool:<52} {:<8} {:>6}  {path}  {reason}\n", "FAULT", "-")
            }
        };
        report.push_str(&line);
    }
    report.push_str(&format!("\nskipped ({}):\n", skipped.len()));
    for (tool, missing) in &skipped {
        report.push_str(&format!("  {tool:<52} cannot fill: {missing}\n"));
    }
    let section = |title: &str, items: &[String]| {
        let mut s = format!("\n{title} ({}):\n", items.len());
        for i in items {
            s.push_str(&format!("  {i}\n"));
        }
        s
    };
    report.push_str(&section("expected Gitea refusals", &expected));
    report.push_str(&section("UNEXPECTED Gitea refusals", &unexpected));
    report.push_str(&section("stale allow-list entries", &stale));
    report.push_str(&section("GATEWAY FAULTS", &faults));
    report.push_str(&format!(
        "\nGET operations: {}; called: {}, ok: {ok}, gitea-refused: {refused} \
         ({} expected, {} unexpected), gateway-fault: {}, skipped: {}; {:.1} s\n",
        gets.len(),
        rows.len(),
        expected.len(),
        unexpected.len(),
        faults.len(),
        skipped.len(),
        elapsed.as_secs_f64()
    ));
    println!("{report}");

    assert!(faults.is_empty(), "gateway faults:\n{}", faults.join("\n"));
    assert!(
        unexpected.is_empty(),
        "Gitea refusals not in EXPECTED_REFUSALS:\n{}",
        unexpected.join("\n")
    );
}

/// The premise of the sweep's 404 rule, checked through the gateway: a route
/// Gitea lacks gives the generic message (plain-text body), an absent object
/// on a real route gives Gitea's own JSON message.
#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn route_miss_is_told_apart_from_a_missing_object() {
    let fx = Fixture::load();
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let client = gw.client().await;
    let (owner, repo) = (fx.owner(), fx.repo());

    let (is_error, miss) = call(
        &client,
        "gitea_api_request",
        json!({"method": "GET", "path": format!("/repos/{owner}/{repo}/no-such-route")}),
    )
    .await;
    assert!(is_error, "{miss}");
    assert_eq!(
        miss,
        json!({"error": {"status": 404, "kind": "not_found", "message": GENERIC_404}})
    );

    let (is_error, absent) = call(
        &client,
        "gitea_issue_get_issue",
        json!({"owner": owner, "repo": repo, "index": 999_999}),
    )
    .await;
    assert!(is_error, "{absent}");
    assert_eq!(absent["error"]["status"], 404);
    assert_eq!(absent["error"]["kind"], "not_found");
    assert_ne!(absent["error"]["message"], GENERIC_404, "{absent}");

    // The same pair straight from Gitea, as the sweep's probe sees it.
    let catalog = Catalog::bundled();
    let op = catalog.get("gitea_issue_get_issue").unwrap();
    let mut args = Map::new();
    args.insert("owner".into(), owner.clone().into());
    args.insert("repo".into(), repo.clone().into());
    args.insert("index".into(), 999_999.into());
    let (_, ct, body) = raw_answer(&fx, op, &args).await;
    assert!(!is_route_miss(ct.as_deref(), &body), "{ct:?} {body}");
    // ... and an operation whose route Gitea lacks is recognised as a miss.
    let mut bogus = op.clone();
    bogus.route = "/repos/{owner}/{repo}/no-such-route/{index}".into();
    let (sent, ct, body) = raw_answer(&fx, &bogus, &args).await;
    assert!(is_route_miss(ct.as_deref(), &body), "{sent}: {ct:?} {body}");
}
