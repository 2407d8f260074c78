//! The rule for writing a migration (docs/store.md, "Writing a
//! migration"), checked on each migration file in turn: applied after the
//! ones before it, an expanding step only adds (no column, index or
//! foreign key of the schema before is dropped, renamed or changed; a new
//! column of an existing table is nullable or has a default; no new unique
//! index on an existing table), so every older binary serves on the store
//! it leaves. A contracting step says so in `store::schema::MIGRATIONS`,
//! and the code of this version reads nothing it drops.

use std::collections::BTreeSet;

use aegis_gitea_mcp::store::schema::{Compatibility, MIGRATIONS};

use super::dialects::schema_lines;
use super::fixture::*;

/// The table a schema line is about (`column grants.scope …` → `grants`).
fn table_of(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("column ")
        .or_else(|| line.strip_prefix("index "))
        .or_else(|| line.strip_prefix("foreign key "))?;
    rest.split(['.', ' ']).next()
}

fn tables(lines: &BTreeSet<String>) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| table_of(l))
        .map(str::to_owned)
        .collect()
}

/// A column's default, as the database reports it (`None`: none).
async fn default_of(f: &Fixture, table: &str, column: &str) -> Option<String> {
    let sql = match f.backend() {
        "sqlite" => {
            format!("SELECT dflt_value FROM pragma_table_info('{table}') WHERE name = '{column}'")
        }
        _ => format!(
            "SELECT column_default::text FROM information_schema.columns \
             WHERE table_name = '{table}' AND column_name = '{column}'"
        ),
    };
    f.raw_texts(&sql).await.into_iter().next()
}

/// The store's SQL, where the code reads columns.
fn store_source() -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir("src/store/sql").unwrap() {
        text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    text
}

pub async fn each_expanding_migration_only_adds(f: &Fixture) {
    f.apply_migrations_up_to(1).await;
    let mut before = schema_lines(f).await;
    let source = store_source();
    for migration in &MIGRATIONS[1..] {
        f.apply_migrations_up_to(migration.level.0).await;
        let after = schema_lines(f).await;
        let removed: Vec<&String> = before.difference(&after).collect();
        let old_tables = tables(&before);
        let mut problems: Vec<String> = removed
            .iter()
            .map(|line| format!("drops or changes `{line}`"))
            .collect();
        for line in after.difference(&before) {
            let Some(table) = table_of(line).filter(|t| old_tables.contains(*t)) else {
                continue;
            };
            if let Some(rest) = line.strip_prefix("column ")
                && rest.ends_with(" not null")
            {
                let column = rest.split([' ', '.']).nth(1).unwrap_or_default();
                if default_of(f, table, column).await.is_none() {
                    problems.push(format!("adds `{line}` without a default"));
                }
            }
            if line.starts_with(&format!("index {table} 1 ")) {
                problems.push(format!("adds the unique `{line}` to an existing table"));
            }
        }
        match migration.compatibility {
            Compatibility::Expand => assert!(
                problems.is_empty(),
                "migration {} ({}) is marked expanding, but it {}: older binaries could not \
                 serve on it. Split it into an expanding step now and a contracting one later \
                 (docs/store.md, \"Writing a migration\")",
                migration.level,
                migration.description,
                problems.join("; ")
            ),
            Compatibility::Contract { .. } => {
                for line in &removed {
                    let Some(rest) = line.strip_prefix("column ") else {
                        continue;
                    };
                    let name = rest.split([' ']).next().unwrap_or_default();
                    let still = after
                        .iter()
                        .any(|l| l.starts_with(&format!("column {name} ")));
                    let column = name.split('.').nth(1).unwrap_or_default();
                    assert!(
                        still || !source.contains(column),
                        "migration {} drops {name}, which src/store/sql still reads",
                        migration.level
                    );
                }
            }
        }
        before = after;
    }
}
