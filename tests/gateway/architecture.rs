//! The import rules of `docs/architecture.md`, read from the source: no
//! cycle between the top-level modules of `src/`, the MCP layer does not
//! reach up to the application, the OAuth server knows no page and no HTTP
//! wiring, and the leaves import nothing of ours beyond what they are
//! allowed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module → the top-level modules it names (`crate::x`),
/// comments included: a doc comment that names a module is a dependency a
/// reader follows too.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap();
            let top = first.as_os_str().to_str().unwrap().trim_end_matches(".rs");
            let text = std::fs::read_to_string(&path).unwrap();
            let targets = edges.entry(top.to_owned()).or_default();
            for code in text.lines() {
                for (i, _) in code.match_indices("crate::") {
                    let name: String = code[i + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != top {
                        targets.insert(name);
                    }
                }
            }
        }
    }
    edges
}

/// A path from `from` back to itself, if any.
fn cycle_through(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    fn walk(
        edges: &BTreeMap<String, BTreeSet<String>>,
        start: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in edges.get(at).into_iter().flatten() {
            if next == start {
                path.push(next.clone());
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(edges, start, next, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![from.to_owned()];
    walk(edges, from, from, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let edges = imports();
    for module in edges.keys() {
        if let Some(cycle) = cycle_through(&edges, module) {
            panic!("import cycle: {}", cycle.join(" → "));
        }
    }
}

#[test]
fn the_mcp_layer_does_not_import_the_application() {
    let edges = imports();
    assert!(!edges["mcp"].contains("app"), "{:?}", edges["mcp"]);
}

/// Issue 47: the tool call and the authorization server stand side by
/// side; the clock and the random ids they share are leaves of their own.
#[test]
fn the_tool_call_does_not_reach_into_the_oauth_server() {
    let edges = imports();
    assert!(!edges["mcp"].contains("oauth"), "{:?}", edges["mcp"]);
}

#[test]
fn the_oauth_server_knows_no_page_and_no_http_wiring() {
    let edges = imports();
    for forbidden in ["pages", "http", "app", "mcp"] {
        assert!(
            !edges["oauth"].contains(forbidden),
            "oauth imports {forbidden}"
        );
    }
}

#[test]
fn the_policy_knows_no_oauth_server_pages_or_http_wiring() {
    let edges = imports();
    for forbidden in ["oauth", "pages", "http", "app"] {
        assert!(
            !edges["policy"].contains(forbidden),
            "policy imports {forbidden}"
        );
    }
}

#[test]
fn the_pages_do_not_depend_on_the_setup_wizard() {
    let edges = imports();
    assert!(!edges["pages"].contains("setup"), "{:?}", edges["pages"]);
}

#[test]
fn leaves_stay_leaves() {
    let edges = imports();
    let allowed: &[(&str, &[&str])] = &[
        ("catalog", &[]),
        // The store reads no clock; the resolved tokens' test moves the
        // caller's time with the clock's `ManualClock`.
        ("store", &["clock", "outcome"]),
        // How a call ended: metrics, activity and spans name it.
        ("outcome", &[]),
        ("clock", &[]),
        ("build_info", &[]),
        ("random", &[]),
        ("identity", &[]),
        ("masking", &[]),
        ("page_kit", &["hidden_text"]),
        ("hidden_text", &[]),
        ("connector_snippets", &[]),
        ("client_address", &[]),
        ("logging", &["telemetry"]),
        ("telemetry", &["build_info", "config", "outcome", "tls"]),
        ("surface", &["catalog"]),
        (
            "gitea",
            &[
                "bounded_body",
                "catalog",
                "config",
                "hidden_text",
                "identity",
                "masking",
                "telemetry",
                "tls",
            ],
        ),
        (
            "audit",
            &[
                "build_info",
                "config",
                "identity",
                "masking",
                "metrics",
                "tls",
            ],
        ),
        ("config", &[]),
    ];
    for (module, may) in allowed {
        let extra: Vec<&String> = edges[*module]
            .iter()
            .filter(|m| !may.contains(&m.as_str()))
            .collect();
        assert!(extra.is_empty(), "{module} imports {extra:?}");
    }
}

/// The functions of `src/` a table keeps whole, each with its reason in a
/// comment above it.
const LONG_TABLES: [(&str, &str); 2] = [
    ("src/metrics.rs", "new"),
    ("src/masking/tests.rs", "hit_table"),
];

/// The longest a function of `src/` may be, in lines from `fn` to its
/// closing brace (issue 57): past it, a reader loses the thread.
const MAX_FUNCTION_LINES: usize = 80;

/// Each function of `src/` with its length: a `fn` line, to the first
/// line at its indentation that closes it. Bodiless declarations are left
/// out.
fn function_lengths(path: &Path) -> Vec<(String, usize)> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let signature = [
            "pub ",
            "pub(crate) ",
            "pub(super) ",
            "async ",
            "const ",
            "unsafe ",
        ]
        .iter()
        .fold(code, |rest, prefix| {
            rest.strip_prefix(prefix).unwrap_or(rest)
        });
        let Some(name) = signature.strip_prefix("fn ") else {
            continue;
        };
        let name: String = name
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = (start..lines.len()).find(|&i| {
            let l = lines[i].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            continue;
        };
        if lines[open].trim_end().ends_with(';') {
            continue;
        }
        let closing = format!("{indent}}}");
        if let Some(end) = (open + 1..lines.len()).find(|&i| lines[i] == closing) {
            found.push((name, end - start + 1));
        }
    }
    found
}

#[test]
fn no_function_in_src_runs_past_eighty_lines_but_the_kept_tables() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    for path in walk(&root.join("src")) {
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let relative = path.strip_prefix(root).unwrap().display().to_string();
        for (name, lines) in function_lengths(&path) {
            let kept = LONG_TABLES.contains(&(relative.as_str(), name.as_str()));
            if lines > MAX_FUNCTION_LINES && !kept {
                long.push(format!("{relative} {name}: {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines: {long:#?}"
    );
}

/// The `rsa` crate's RUSTSEC-2023-0071 concerns private-key operations:
/// no code of the gateway names a private-key type or parses a private
/// key, so the waiver in deny.toml holds. (The fake Gitea signs its test
/// ID tokens with fixture keys; that is test code.)
#[test]
fn no_code_holds_an_rsa_private_key() {
    let forbidden = [
        "RsaPrivateKey",
        "PrivateSigningKey",
        "CoreRsaPrivateSigningKey",
        "from_pkcs1_pem",
        "from_pkcs8_pem",
        "BEGIN RSA PRIVATE KEY",
        "BEGIN PRIVATE KEY",
    ];
    let mut found = Vec::new();
    // Unit-test files are left out: the masker's tests hold a PEM header
    // as text to mask.
    let is_test = |path: &std::path::Path| {
        path.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n == "tests.rs" || n.ends_with("_tests.rs"))
    };
    for entry in walk(std::path::Path::new("src"))
        .into_iter()
        .filter(|p| !is_test(p))
    {
        let text = std::fs::read_to_string(&entry).unwrap();
        for name in forbidden {
            if text.contains(name) {
                found.push(format!("{}: {name}", entry.display()));
            }
        }
    }
    assert!(found.is_empty(), "private-key code in src/: {found:?}");
}

/// The crate denies `unsafe_code` rather than forbidding it for one call
/// with no safe form (glibc's `malloc_trim`): no other file may opt out.
#[test]
fn unsafe_code_is_only_the_allocator_call() {
    let allowed = std::path::Path::new("src/cli/allocator.rs");
    let mut found: Vec<String> = walk(std::path::Path::new("src"))
        .into_iter()
        .filter(|path| path != allowed)
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            text.contains("unsafe {")
                || text.contains("unsafe fn")
                || text.contains("allow(unsafe_code)")
                || text.contains("expect(unsafe_code)")
        })
        .map(|path| path.display().to_string())
        .collect();
    found.sort();
    assert!(
        found.is_empty(),
        "unsafe code outside {}: {found:?}",
        allowed.display()
    );
    let lib = std::fs::read_to_string("src/lib.rs").unwrap();
    assert!(lib.contains("#![deny(unsafe_code)]"));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// True for a span that names a source path (`src/…`, `tests/…`,
/// `templates/…`, `docs/…`).
fn is_path(span: &str) -> bool {
    ["src/", "tests/", "templates/", "docs/", "benches/", "fuzz/"]
        .iter()
        .any(|p| span.starts_with(p))
        && !span.contains(' ')
        && !span.contains('*')
        && !span.contains('{')
}

/// True for a span that names an item: `name`, `Type::method`.
fn is_item(span: &str) -> bool {
    !span.is_empty()
        && span.split("::").all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// Whether `text` (a source file) defines `item`: its last part as a
/// function, type, trait, constant, static or module.
fn defines(text: &str, item: &str) -> bool {
    let name = item.rsplit("::").next().unwrap();
    [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "const ",
        "static ",
        "mod ",
        "type ",
        "macro_rules! ",
    ]
    .iter()
    .any(|kind| {
        text.match_indices(&format!("{kind}{name}"))
            .any(|(at, found)| {
                text[at + found.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
            })
    })
}

/// docs/architecture.md names files, and the functions and types in them
/// as `` `src/file.rs` `Item` `` (the item's span right after the file's):
/// every file exists, and every item so placed is defined in that file (or,
/// for a directory, in a file under it). A rename that leaves the page
/// behind fails here.
#[test]
fn the_architecture_page_names_only_what_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut missing = Vec::new();
    let mut checked = 0;
    for line in page.lines() {
        let spans: Vec<&str> = line.split('`').collect();
        // spans[1], spans[3], … are code; spans[2], … what lies between.
        for i in (1..spans.len()).step_by(2) {
            let span = spans[i];
            if !is_path(span) {
                continue;
            }
            let path = root.join(span.trim_end_matches('/'));
            if !path.exists() {
                missing.push(format!("file {span}"));
                continue;
            }
            checked += 1;
            let adjacent = spans
                .get(i + 1)
                .is_some_and(|between| between.trim().is_empty());
            let Some(item) = spans.get(i + 2).filter(|s| adjacent && is_item(s)) else {
                continue;
            };
            let texts: Vec<String> = if path.is_dir() {
                walk(&path)
                    .iter()
                    .map(|f| std::fs::read_to_string(f).unwrap())
                    .collect()
            } else {
                vec![std::fs::read_to_string(&path).unwrap()]
            };
            if !texts.iter().any(|t| defines(t, item)) {
                missing.push(format!("{item} in {span}"));
            }
        }
    }
    assert!(checked > 50, "the page names {checked} files");
    assert!(
        missing.is_empty(),
        "docs/architecture.md names what does not exist: {missing:#?}"
    );
}
