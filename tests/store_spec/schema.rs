//! The store's schema over time, as a binary meets it: a new store and an
//! old one get their history; a store behind is migrated (backed up first
//! on SQLite), or refused under `STORE_MIGRATE=never` with nothing
//! written; a newer store is served when its newer steps expand and
//! refused, naming both levels, the writer and the way back, when one
//! contracts past this binary.

use aegis_gitea_mcp::store::schema::{
    MigrateMode, SchemaLevel, SchemaRefusal, StoreOpening, binary_level,
};
use aegis_gitea_mcp::store::{check_sqlite_copy, open_store_with};

use super::fixture::*;

const VERSION: &str = "0.1.0 (this-binary)";

async fn open_as(f: &Fixture, mode: MigrateMode) -> Result<Arc<dyn Store>, StoreError> {
    let cipher = TokenCipher::new(&[SecretString::from(KEY_A)]).unwrap();
    let mut opening = StoreOpening::auto(VERSION, NOW);
    opening.migrate = mode;
    open_store_with(f.location(), cipher, StoreLimits::default(), &opening)
        .await
        .map(|(store, _)| store)
}

/// `version applied_by` of each history row, in order (`-` for none).
async fn history(f: &Fixture) -> Vec<String> {
    f.raw_texts(
        "SELECT CAST(version AS TEXT) || ' ' || COALESCE(applied_by, '-') \
         FROM aegis_schema_history ORDER BY version",
    )
    .await
}

async fn sqlx_levels(f: &Fixture) -> Vec<String> {
    f.raw_texts("SELECT CAST(version AS TEXT) FROM _sqlx_migrations ORDER BY version")
        .await
}

pub async fn a_new_store_records_every_migration_as_applied_by_this_binary(f: &Fixture) {
    let store = open_as(f, MigrateMode::Auto).await.unwrap();
    let rows = history(f).await;
    assert_eq!(rows.len() as i64, binary_level().0);
    assert!(rows.iter().all(|r| r.ends_with(VERSION)), "{rows:?}");
    let status = store.schema_status().await.unwrap();
    assert_eq!(
        (status.store, status.binary),
        (binary_level(), binary_level())
    );
}

pub async fn a_store_from_before_the_history_gets_one_naming_no_applier(f: &Fixture) {
    f.apply_migrations_up_to(binary_level().0).await;
    open_as(f, MigrateMode::Auto).await.unwrap();
    let rows = history(f).await;
    assert_eq!(rows.len() as i64, binary_level().0);
    assert!(rows.iter().all(|r| r.ends_with(" -")), "{rows:?}");
}

pub async fn a_store_behind_is_migrated_and_its_history_names_this_binary(f: &Fixture) {
    f.apply_migrations_up_to(8).await;
    let store = open_as(f, MigrateMode::Auto).await.unwrap();
    assert_eq!(sqlx_levels(f).await.len() as i64, binary_level().0);
    let rows = history(f).await;
    assert_eq!(rows[7], "8 -");
    assert_eq!(rows[8], format!("9 {VERSION}"));
    store.ping().await.unwrap();
}

/// The indexes the opening keeps outside the migrations (docs/store.md,
/// "This release adds no migration, and its indexes") that exist.
async fn opening_indexes(f: &Fixture) -> Vec<String> {
    let mut found = f
        .raw_texts(match f.backend() {
            "sqlite" => "SELECT name FROM sqlite_master WHERE type = 'index' \
                         AND name IN ('grants_created', 'grants_client_created', 'grants_login_lower', 'clients_created')",
            _ => "SELECT indexname::text FROM pg_indexes \
                  WHERE indexname IN ('grants_created', 'grants_client_created', 'grants_login_lower', 'clients_created')",
        })
        .await;
    found.sort();
    found
}

pub async fn the_opening_keeps_its_indexes_outside_the_migrations(f: &Fixture) {
    f.apply_migrations_up_to(binary_level().0).await;
    assert!(
        opening_indexes(f).await.is_empty(),
        "no migration creates them"
    );
    drop(open_as(f, MigrateMode::Never).await.unwrap());
    assert!(opening_indexes(f).await.is_empty(), "never writes nothing");
    drop(open_as(f, MigrateMode::Auto).await.unwrap());
    let store = open_as(f, MigrateMode::Auto).await.unwrap();
    assert_eq!(
        opening_indexes(f).await,
        [
            "clients_created",
            "grants_client_created",
            "grants_created",
            "grants_login_lower"
        ]
    );
    assert_eq!(sqlx_levels(f).await.len() as i64, binary_level().0);
    store.ping().await.unwrap();
}

/// Replicas started together on a new store (a Deployment's first
/// rollout): every one opens it, and its history is written once. Each
/// opening is a task of its own, so their statements interleave as
/// separate processes' would.
pub async fn openings_at_the_same_moment_all_open_the_new_store(f: &Fixture) {
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let location = f.location().clone();
            tokio::spawn(async move {
                let cipher = TokenCipher::new(&[SecretString::from(KEY_A)]).unwrap();
                let opening = StoreOpening::auto(VERSION, NOW);
                open_store_with(&location, cipher, StoreLimits::default(), &opening)
                    .await
                    .map(|(store, _)| store)
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap().ping().await.unwrap();
    }
    assert_eq!(history(f).await.len() as i64, binary_level().0);
    assert_eq!(opening_indexes(f).await.len(), 4);
}

pub async fn a_store_behind_under_never_is_refused_and_nothing_is_written(f: &Fixture) {
    f.apply_migrations_up_to(8).await;
    let err = open_as(f, MigrateMode::Never).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Schema(SchemaRefusal::Pending { store, .. }) if *store == SchemaLevel(8)),
        "{err}"
    );
    assert!(err.to_string().contains("store migrate"), "{err}");
    assert_eq!(sqlx_levels(f).await.len(), 8);
    let tables = f
        .raw_texts(match f.backend() {
            "sqlite" => "SELECT name FROM sqlite_master WHERE name = 'aegis_schema_history'",
            _ => "SELECT table_name::text FROM information_schema.tables WHERE table_name = 'aegis_schema_history'",
        })
        .await;
    assert!(tables.is_empty(), "the history was created: {tables:?}");
}

pub async fn a_newer_store_whose_new_steps_expand_is_served(f: &Fixture) {
    drop(open_as(f, MigrateMode::Auto).await.unwrap());
    let next = binary_level().0 + 1;
    f.pretend_newer_migration(next, 0, "/backups/b").await;
    let store = open_as(f, MigrateMode::Never).await.unwrap();
    let status = store.schema_status().await.unwrap();
    assert_eq!(status.store, SchemaLevel(next));
    assert_eq!(status.binary, binary_level());
    store
        .insert_client(&client("after-rollback", NOW), None, NOW)
        .await
        .unwrap();
}

pub async fn a_newer_store_whose_step_contracts_past_this_binary_is_refused(f: &Fixture) {
    drop(open_as(f, MigrateMode::Auto).await.unwrap());
    let next = binary_level().0 + 1;
    f.pretend_newer_migration(next, next, "/data/backups/before-schema-x")
        .await;
    let err = open_as(f, MigrateMode::Auto).await.unwrap_err();
    let StoreError::Schema(SchemaRefusal::TooNew { store, binary, .. }) = &err else {
        panic!("a refusal for a store too new: {err}");
    };
    assert_eq!((*store, *binary), (SchemaLevel(next), binary_level()));
    let text = err.to_string();
    for part in [
        "9.9.9 (future)",
        VERSION,
        "store restore /data/backups/before-schema-x",
    ] {
        assert!(text.contains(part), "{part:?} in {text}");
    }
    assert_eq!(
        sqlx_levels(f).await.len() as i64,
        next,
        "nothing was undone"
    );
}

pub async fn the_schema_status_reads_the_store_as_it_is_now(f: &Fixture) {
    let store = open_as(f, MigrateMode::Auto).await.unwrap();
    let next = binary_level().0 + 1;
    f.pretend_newer_migration(next, 0, "").await;
    assert_eq!(
        store.schema_status().await.unwrap().store,
        SchemaLevel(next)
    );
}

pub mod sqlite_backups {
    use super::*;
    use aegis_gitea_mcp::store::schema::backup::{before_migration_folders, check_files};

    #[tokio::test]
    async fn a_sqlite_store_is_backed_up_before_it_migrates_and_the_history_names_the_backup() {
        let f = Fixture::sqlite();
        f.apply_migrations_up_to(8).await;
        f.raw_execute(
            "INSERT INTO clients (client_id, client_name, redirect_uris, token_endpoint_auth_method, \
             grant_types, response_types, registration, metadata, created_at) \
             VALUES ('kept', 'Kept', '[]', 'none', '[]', '[]', 'dcr', '{}', 1)",
        )
        .await;
        drop(open_as(&f, MigrateMode::Auto).await.unwrap());
        let StoreLocation::Sqlite(dir) = f.location() else {
            unreachable!()
        };
        let folders = before_migration_folders(dir);
        assert_eq!(folders.len(), 1);
        let backup = &folders[0];
        assert_eq!(backup.manifest.schema, 8);
        assert_eq!(backup.manifest.binary_version, VERSION);
        check_files(&backup.path, &backup.manifest).unwrap();
        let copy = backup.path.join("aegis.db");
        assert_eq!(check_sqlite_copy(&copy).await.unwrap(), SchemaLevel(8));
        let rows = f
            .raw_texts("SELECT backup FROM aegis_schema_history WHERE version = 9")
            .await;
        assert_eq!(rows, [backup.path.display().to_string()]);
    }

    #[tokio::test]
    async fn a_store_at_its_level_takes_no_backup() {
        let f = Fixture::sqlite();
        drop(open_as(&f, MigrateMode::Auto).await.unwrap());
        drop(open_as(&f, MigrateMode::Auto).await.unwrap());
        let StoreLocation::Sqlite(dir) = f.location() else {
            unreachable!()
        };
        assert!(before_migration_folders(dir).is_empty());
    }
}
