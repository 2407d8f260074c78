//! What a binary does with the store it opens, decided from what the store
//! says it has applied and what the binary carries: create it, migrate it,
//! serve on it as it is (its own level, or a newer one whose migrations
//! all let this binary serve), or refuse with the way back. Pure.

use super::{KnownMigration, MigrateMode, RecordedMigration, SchemaLevel};

/// A migration the store says it applied (sqlx's `_sqlx_migrations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppliedMigration {
    pub level: SchemaLevel,
    /// `false`: it failed part-way and the store may be half changed.
    pub succeeded: bool,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaPlan {
    /// An empty store: every migration runs; there is nothing to back up.
    Create {
        pending: Vec<KnownMigration>,
    },
    /// The store is at this binary's level.
    UpToDate {
        level: SchemaLevel,
    },
    /// The store is behind: `pending` run, oldest first, after a backup.
    Migrate {
        from: SchemaLevel,
        pending: Vec<KnownMigration>,
    },
    /// The store is ahead, and every migration this binary does not know
    /// lets it serve (each an expanding step, or a contracting one whose
    /// oldest reader it is not older than).
    ServeNewer {
        store: SchemaLevel,
        binary: SchemaLevel,
        unknown: Vec<RecordedMigration>,
    },
    Refuse(SchemaRefusal),
}

/// Why a binary will not serve on a store. The message names both levels,
/// the binary that wrote the store and the way back; the CLI exits 3.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaRefusal {
    #[error(
        "the store's schema is at {store}{written_by}, and this binary ({binary_version}) knows \
         schema {binary} at most: {blocking}. Run that version or a newer one, or go back to \
         the store as it was before: {way_back}",
        written_by = written_by(writer.as_deref()),
        blocking = describe_blocking(blocking, *binary),
        way_back = way_back(backup.as_deref()),
    )]
    TooNew {
        store: SchemaLevel,
        binary: SchemaLevel,
        binary_version: String,
        /// The binary that applied the store's newest migration.
        writer: Option<String>,
        /// The migrations this binary does not know that it cannot serve on.
        blocking: Vec<RecordedMigration>,
        /// The backup taken before the first migration this binary does
        /// not know: the store at a level it serves on.
        backup: Option<String>,
    },
    #[error(
        "the store's schema is at {store} and this binary needs {binary} ({pending}), but \
         STORE_MIGRATE=never: run `aegis-gitea-mcp store migrate` first \
         (docs/operations.md#upgrading-replicas)",
        pending = describe_pending(pending),
    )]
    Pending {
        store: SchemaLevel,
        binary: SchemaLevel,
        pending: Vec<KnownMigration>,
    },
    #[error(
        "migration {level} failed part-way on this store, which may be half changed: restore the \
         backup taken before it (docs/operations.md#backups), then start again"
    )]
    Dirty { level: SchemaLevel },
    #[error(
        "the store lacks migration {missing} although it holds later ones: it was not made by this \
         gateway's migrations, or was changed by hand; restore a backup (docs/operations.md#backups)"
    )]
    Gap { missing: SchemaLevel },
}

fn written_by(writer: Option<&str>) -> String {
    writer.map_or_else(String::new, |w| {
        format!(" (its newest migration applied by aegis-gitea-mcp {w})")
    })
}

fn describe_blocking(blocking: &[RecordedMigration], binary: SchemaLevel) -> String {
    let each: Vec<String> = blocking
        .iter()
        .map(|m| {
            let oldest = m.compatibility.oldest_reader();
            if m.description.is_empty() {
                format!(
                    "migration {} is not in the store's history, so nothing says this binary may serve on it",
                    m.level
                )
            } else {
                format!(
                    "migration {} ({}) needs schema {} or newer, and this binary is at {binary}",
                    m.level, m.description, oldest
                )
            }
        })
        .collect();
    each.join("; ")
}

fn way_back(backup: Option<&str>) -> String {
    match backup {
        Some(path) => format!(
            "`aegis-gitea-mcp store restore {path}` puts back the backup taken just before \
             (what was written since is lost; docs/operations.md#rolling-back)"
        ),
        None => "restore the backup or database dump taken before the upgrade \
                 (docs/operations.md#rolling-back)"
            .to_owned(),
    }
}

fn describe_pending(pending: &[KnownMigration]) -> String {
    let each: Vec<String> = pending
        .iter()
        .map(|m| format!("{} {}", m.level, m.description))
        .collect();
    format!("pending: {}", each.join(", "))
}

/// Decides what to do with a store that has `applied` (and records
/// `recorded`), for a binary carrying `known` under `mode`.
pub fn plan(
    known: &[KnownMigration],
    applied: &[AppliedMigration],
    recorded: &[RecordedMigration],
    mode: MigrateMode,
    binary_version: &str,
) -> SchemaPlan {
    if let Some(dirty) = applied.iter().find(|a| !a.succeeded) {
        return SchemaPlan::Refuse(SchemaRefusal::Dirty { level: dirty.level });
    }
    let binary = known.last().map_or(SchemaLevel(0), |m| m.level);
    let store = applied
        .iter()
        .map(|a| a.level)
        .max()
        .unwrap_or(SchemaLevel(0));
    let is_applied = |level: SchemaLevel| applied.iter().any(|a| a.level == level);
    let pending: Vec<KnownMigration> = known
        .iter()
        .filter(|m| !is_applied(m.level))
        .copied()
        .collect();
    // A pending migration below the store's level is a hole in its history.
    if let Some(hole) = pending.iter().find(|m| m.level < store) {
        return SchemaPlan::Refuse(SchemaRefusal::Gap {
            missing: hole.level,
        });
    }
    if !pending.is_empty() {
        if mode == MigrateMode::Never {
            return SchemaPlan::Refuse(SchemaRefusal::Pending {
                store,
                binary,
                pending,
            });
        }
        return if applied.is_empty() {
            SchemaPlan::Create { pending }
        } else {
            SchemaPlan::Migrate {
                from: store,
                pending,
            }
        };
    }
    let mut unknown: Vec<SchemaLevel> = applied
        .iter()
        .map(|a| a.level)
        .filter(|level| !known.iter().any(|m| m.level == *level))
        .collect();
    unknown.sort();
    if unknown.is_empty() {
        return SchemaPlan::UpToDate { level: store };
    }
    plan_newer(&unknown, recorded, store, binary, binary_version)
}

/// A store ahead of the binary, at `unknown` levels it does not carry:
/// served on when each of them lets it, refused otherwise.
fn plan_newer(
    unknown: &[SchemaLevel],
    recorded: &[RecordedMigration],
    store: SchemaLevel,
    binary: SchemaLevel,
    binary_version: &str,
) -> SchemaPlan {
    let unknown: Vec<RecordedMigration> = unknown
        .iter()
        .map(|level| record_of(recorded, *level))
        .collect();
    let blocking: Vec<RecordedMigration> = unknown
        .iter()
        .filter(|m| m.description.is_empty() || m.compatibility.oldest_reader() > binary)
        .cloned()
        .collect();
    if blocking.is_empty() {
        return SchemaPlan::ServeNewer {
            store,
            binary,
            unknown,
        };
    }
    SchemaPlan::Refuse(SchemaRefusal::TooNew {
        store,
        binary,
        binary_version: binary_version.to_owned(),
        writer: recorded
            .iter()
            .find(|r| r.level == store)
            .and_then(|r| r.applied_by.clone()),
        backup: unknown.first().and_then(|m| m.backup.clone()),
        blocking,
    })
}

/// The history's record of migration `level`, or one that lets no older
/// binary serve.
fn record_of(recorded: &[RecordedMigration], level: SchemaLevel) -> RecordedMigration {
    recorded
        .iter()
        .find(|r| r.level == level)
        .cloned()
        // Not in the history: nothing says an older binary may serve,
        // so it may not (fail closed).
        .unwrap_or(RecordedMigration {
            level,
            description: String::new(),
            compatibility: super::Compatibility::Contract {
                oldest_reader: level,
            },
            applied_by: None,
            backup: None,
        })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
