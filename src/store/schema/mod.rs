//! The store's schema over time: which migrations this binary knows, what
//! each asks of the binaries that serve on a store it has reached, and
//! what a binary does with a store of another level (`plan`). The history
//! of applied migrations, with who applied them and the backup taken
//! before, is kept in the store itself (its SQL: `sql/schema.rs`); a
//! SQLite store is backed up before a migration, into a folder this
//! module names and prunes (`backup`). docs/operations.md has the
//! operator's view, docs/store.md the rule for writing a migration.

pub mod backup;
mod plan;

pub use plan::{AppliedMigration, SchemaPlan, SchemaRefusal, plan};

use super::UnixTime;

/// A schema level: the number of the newest migration applied to a store,
/// or the newest a binary knows. 0 is an empty store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SchemaLevel(pub i64);

impl std::fmt::Display for SchemaLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}", self.0)
    }
}

/// What a migration, once applied, asks of the binaries serving on the
/// store: the rule of expanding and contracting steps (docs/store.md,
/// "Writing a migration").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compatibility {
    /// It only adds (a table, a nullable column or one with a default, an
    /// index that is not unique, a backfill): binaries that predate it
    /// serve on the store and never notice.
    Expand,
    /// It removes or changes what binaries before `oldest_reader` read:
    /// they refuse the store, naming the way back. `oldest_reader` is the
    /// first level whose code no longer reads what it removes; the step
    /// comes at least one release after that code.
    Contract { oldest_reader: SchemaLevel },
}

impl Compatibility {
    /// The lowest level whose binaries serve on a store with this applied
    /// (0 for every level).
    pub fn oldest_reader(self) -> SchemaLevel {
        match self {
            Self::Expand => SchemaLevel(0),
            Self::Contract { oldest_reader } => oldest_reader,
        }
    }

    pub(crate) fn from_oldest_reader(level: SchemaLevel) -> Self {
        if level.0 <= 0 {
            Self::Expand
        } else {
            Self::Contract {
                oldest_reader: level,
            }
        }
    }
}

/// A migration this binary carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownMigration {
    pub level: SchemaLevel,
    pub description: &'static str,
    pub compatibility: Compatibility,
}

const fn known(version: i64, description: &'static str) -> KnownMigration {
    KnownMigration {
        level: SchemaLevel(version),
        description,
        compatibility: Compatibility::Expand,
    }
}

/// Every migration this binary carries, oldest first; the SQL of each is
/// in `migrations/{sqlite,postgres}/NNNN_*.sql` (`sql::backend`). Adding
/// one: the next number here and in both folders, its compatibility
/// checked by tests/store_spec/compatibility.rs, and a store fixture
/// written at the new level (tests/fixtures/stores/README.md).
pub const MIGRATIONS: &[KnownMigration] = &[
    known(1, "init"),
    known(2, "page sessions"),
    known(3, "security review"),
    known(4, "replicas"),
    known(5, "gitea token lifetime"),
    known(6, "gitea apps"),
    known(7, "confirmations"),
    known(8, "activity"),
    known(9, "grant redirect uri"),
    known(10, "confirmation summary sealed"),
];

/// The newest level this binary knows.
pub fn binary_level() -> SchemaLevel {
    MIGRATIONS.last().map_or(SchemaLevel(0), |m| m.level)
}

/// Whether a store at a level this binary does not reach may be migrated
/// when it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MigrateMode {
    /// Apply pending migrations at startup (after a backup, on SQLite).
    #[default]
    Auto,
    /// Never: a store with pending migrations is refused until
    /// `store migrate` has run (replicas told not to migrate).
    Never,
}

/// How a store is opened: the migration rule, the backups kept, and who is
/// opening it (the binary's version, recorded with what it applies).
#[derive(Debug, Clone)]
pub struct StoreOpening {
    pub migrate: MigrateMode,
    /// Backups taken before a migration that are kept (SQLite); 0 takes
    /// none.
    pub keep_backups: usize,
    /// This binary's version (`build_info::VERSION`), for the history.
    pub binary_version: String,
    /// The time recorded with what is applied.
    pub now: UnixTime,
}

impl StoreOpening {
    /// Migrate at start, keep three backups.
    pub fn auto(binary_version: &str, now: UnixTime) -> Self {
        Self {
            migrate: MigrateMode::Auto,
            keep_backups: DEFAULT_KEEP_BACKUPS,
            binary_version: binary_version.to_owned(),
            now,
        }
    }
}

/// Backups before migrations kept by default (`STORE_BACKUPS_KEEP`).
pub const DEFAULT_KEEP_BACKUPS: usize = 3;

/// A migration as the store's history records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedMigration {
    pub level: SchemaLevel,
    pub description: String,
    pub compatibility: Compatibility,
    /// The binary that applied it; `None` when it was applied before the
    /// history was kept (and recorded later by a binary that knew it).
    pub applied_by: Option<String>,
    /// The backup taken just before it was applied (SQLite).
    pub backup: Option<String>,
}

/// What a store holds and what this binary knows, as `/health`, the
/// startup log and `store migrate --check` say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaStatus {
    /// The newest migration applied to the store.
    pub store: SchemaLevel,
    /// The newest migration this binary carries.
    pub binary: SchemaLevel,
}

/// What opening a store did, for the startup log and `store migrate`.
#[derive(Debug, Clone)]
pub struct OpenReport {
    pub status: SchemaStatus,
    /// Migrations applied now, oldest first.
    pub applied: Vec<KnownMigration>,
    /// The backup taken before them (SQLite).
    pub backup: Option<std::path::PathBuf>,
    /// The store is newer than this binary, which serves on it.
    pub serving_newer: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_levels_count_up_from_one_without_a_gap() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.level, SchemaLevel(i as i64 + 1), "{m:?}");
        }
    }

    #[test]
    fn a_level_prints_as_its_file_number() {
        assert_eq!(SchemaLevel(9).to_string(), "0009");
    }

    #[test]
    fn an_expanding_step_is_read_by_every_level() {
        assert_eq!(Compatibility::Expand.oldest_reader(), SchemaLevel(0));
        let contract = Compatibility::Contract {
            oldest_reader: SchemaLevel(12),
        };
        assert_eq!(
            Compatibility::from_oldest_reader(contract.oldest_reader()),
            contract
        );
        assert_eq!(
            Compatibility::from_oldest_reader(SchemaLevel(0)),
            Compatibility::Expand
        );
    }
}
