//! One row per store a binary may meet: what it applied, what its history
//! says, the binary's rule; and what the binary does.

use super::*;
use crate::store::schema::{Compatibility, KnownMigration};

/// A binary that knows migrations 1 to `top`, all expanding.
fn binary(top: i64) -> Vec<KnownMigration> {
    (1..=top)
        .map(|level| KnownMigration {
            level: SchemaLevel(level),
            description: "known",
            compatibility: Compatibility::Expand,
        })
        .collect()
}

fn applied(levels: std::ops::RangeInclusive<i64>) -> Vec<AppliedMigration> {
    levels
        .map(|level| AppliedMigration {
            level: SchemaLevel(level),
            succeeded: true,
        })
        .collect()
}

fn recorded(level: i64, oldest_reader: i64, backup: Option<&str>) -> RecordedMigration {
    RecordedMigration {
        level: SchemaLevel(level),
        description: format!("step {level}"),
        compatibility: if oldest_reader == 0 {
            Compatibility::Expand
        } else {
            Compatibility::Contract {
                oldest_reader: SchemaLevel(oldest_reader),
            }
        },
        applied_by: Some(format!("0.1.0 (writer{level})")),
        backup: backup.map(str::to_owned),
    }
}

/// The plan in a word, and the levels it names.
fn outcome(plan: &SchemaPlan) -> String {
    match plan {
        SchemaPlan::Create { pending } => format!("create {}", pending.len()),
        SchemaPlan::UpToDate { level } => format!("up to date at {}", level.0),
        SchemaPlan::Migrate { from, pending } => format!(
            "migrate from {} through {}",
            from.0,
            pending.last().unwrap().level.0
        ),
        SchemaPlan::ServeNewer { store, unknown, .. } => {
            format!("serve newer {} ({} unknown)", store.0, unknown.len())
        }
        SchemaPlan::Refuse(SchemaRefusal::TooNew {
            store, blocking, ..
        }) => format!(
            "refuse too new {} blocked by {:?}",
            store.0,
            blocking.iter().map(|b| b.level.0).collect::<Vec<_>>()
        ),
        SchemaPlan::Refuse(SchemaRefusal::Pending { store, .. }) => {
            format!("refuse pending at {}", store.0)
        }
        SchemaPlan::Refuse(SchemaRefusal::Dirty { level }) => format!("refuse dirty {}", level.0),
        SchemaPlan::Refuse(SchemaRefusal::Gap { missing }) => format!("refuse gap {}", missing.0),
    }
}

/// A store's case: its name, what it applied, its history, the rule, and
/// the outcome expected.
type Row = (
    &'static str,
    Vec<AppliedMigration>,
    Vec<RecordedMigration>,
    MigrateMode,
    &'static str,
);

/// Each row's plan, by a binary that knows migrations 1 to 10.
fn assert_outcomes(rows: Vec<Row>) {
    for (name, applied, recorded, mode, expected) in rows {
        let plan = plan(&binary(10), &applied, &recorded, mode, "0.1.0 (this)");
        assert_eq!(outcome(&plan), expected, "{name}");
    }
}

#[test]
fn an_empty_store_is_created_unless_migrating_is_off() {
    use MigrateMode::{Auto, Never};
    assert_outcomes(vec![
        ("an empty store", vec![], vec![], Auto, "create 10"),
        (
            "an empty store, migrating off",
            vec![],
            vec![],
            Never,
            "refuse pending at 0",
        ),
    ]);
}

#[test]
fn a_store_at_its_level_is_up_to_date_whatever_the_rule() {
    use MigrateMode::{Auto, Never};
    assert_outcomes(vec![
        (
            "a store at its level",
            applied(1..=10),
            vec![],
            Auto,
            "up to date at 10",
        ),
        (
            "a store at its level, migrating off",
            applied(1..=10),
            vec![],
            Never,
            "up to date at 10",
        ),
    ]);
}

#[test]
fn a_store_behind_is_migrated_unless_migrating_is_off() {
    use MigrateMode::{Auto, Never};
    assert_outcomes(vec![
        (
            "a store behind",
            applied(1..=8),
            vec![],
            Auto,
            "migrate from 8 through 10",
        ),
        (
            "a store behind, migrating off",
            applied(1..=8),
            vec![],
            Never,
            "refuse pending at 8",
        ),
    ]);
}

#[test]
fn a_newer_store_is_served_only_when_every_unknown_step_lets_this_binary() {
    use MigrateMode::{Auto, Never};
    assert_outcomes(vec![
        (
            "a newer store whose new steps expand",
            applied(1..=12),
            vec![recorded(11, 0, None), recorded(12, 0, None)],
            Never,
            "serve newer 12 (2 unknown)",
        ),
        (
            "a newer store whose contracting step this level still reads",
            applied(1..=11),
            vec![recorded(11, 10, None)],
            Auto,
            "serve newer 11 (1 unknown)",
        ),
        (
            "a newer store whose contracting step needs a newer reader",
            applied(1..=12),
            vec![
                recorded(11, 0, Some("/data/backups/b11")),
                recorded(12, 12, None),
            ],
            Auto,
            "refuse too new 12 blocked by [12]",
        ),
        (
            "a newer store whose step is missing from the history",
            applied(1..=11),
            vec![],
            Auto,
            "refuse too new 11 blocked by [11]",
        ),
    ]);
}

#[test]
fn a_store_with_a_broken_history_is_refused() {
    let dirty = {
        let mut a = applied(1..=10);
        a[9].succeeded = false;
        a
    };
    let hole = {
        let mut a = applied(1..=10);
        a.remove(4);
        a
    };
    assert_outcomes(vec![
        (
            "a migration that failed part-way",
            dirty,
            vec![],
            MigrateMode::Auto,
            "refuse dirty 10",
        ),
        (
            "a store with a hole",
            hole,
            vec![],
            MigrateMode::Auto,
            "refuse gap 5",
        ),
    ]);
}

#[test]
fn a_refusal_names_both_levels_the_writer_and_the_backup_before_the_first_unknown_step() {
    let recorded = vec![
        recorded(11, 0, Some("/data/backups/before-schema-0011")),
        recorded(12, 12, Some("/data/backups/before-schema-0012")),
    ];
    let SchemaPlan::Refuse(refusal) = plan(
        &binary(10),
        &applied(1..=12),
        &recorded,
        MigrateMode::Auto,
        "0.1.0 (old)",
    ) else {
        panic!("a refusal");
    };
    let text = refusal.to_string();
    for part in [
        "the store's schema is at 0012",
        "aegis-gitea-mcp 0.1.0 (writer12)",
        "this binary (0.1.0 (old)) knows schema 0010 at most",
        "migration 0012 (step 12) needs schema 0012 or newer",
        "store restore /data/backups/before-schema-0011",
    ] {
        assert!(text.contains(part), "{part:?} in {text}");
    }
    assert!(
        !text.contains("migration 0011 ("),
        "an expanding step does not block: {text}"
    );
}

#[test]
fn a_refusal_without_a_backup_points_at_the_dump_taken_before() {
    let SchemaPlan::Refuse(refusal) = plan(
        &binary(10),
        &applied(1..=11),
        &[recorded(11, 11, None)],
        MigrateMode::Auto,
        "0.1.0",
    ) else {
        panic!("a refusal");
    };
    assert!(
        refusal
            .to_string()
            .contains("restore the backup or database dump taken before the upgrade"),
        "{refusal}"
    );
}

#[test]
fn pending_migrations_under_never_name_the_command_that_applies_them() {
    let SchemaPlan::Refuse(refusal) = plan(
        &binary(10),
        &applied(1..=9),
        &[],
        MigrateMode::Never,
        "0.1.0",
    ) else {
        panic!("a refusal");
    };
    let text = refusal.to_string();
    assert!(text.contains("pending: 0010 known"), "{text}");
    assert!(text.contains("aegis-gitea-mcp store migrate"), "{text}");
}
