//! `store rekey`, `store migrate [--check]`, `store backup PATH` and
//! `store restore PATH [--force]`: the store's upkeep from the command
//! line (docs/operations.md).

use std::path::Path;

use super::CliError;
use crate::config::{ConfigError, Settings};
use crate::store::cipher::TokenCipher;
use crate::store::schema::{KnownMigration, SchemaLevel, SchemaPlan};
use crate::store::{StoreError, StoreLimits, inspect_store, open_store_with};

fn now() -> i64 {
    use crate::clock::{Clock, SystemClock};
    SystemClock.now()
}

fn cipher(settings: &Settings, command: &str) -> Result<TokenCipher, CliError> {
    if settings.token_encryption_keys.is_empty() {
        return Err(ConfigError::new(
            "TOKEN_ENCRYPTION_KEY",
            format!("is required for `store {command}`"),
        )
        .into());
    }
    TokenCipher::new(&settings.token_encryption_keys).map_err(CliError::other)
}

fn store_error(err: StoreError) -> CliError {
    match err {
        StoreError::Schema(refusal) => CliError::Schema(refusal),
        other => CliError::other(other),
    }
}

/// `store rekey`: rewrites every encrypted value under the newest key,
/// then proves the store opens with that key alone.
pub(super) async fn rekey(settings: &Settings) -> Result<(), CliError> {
    let cipher = cipher(settings, "rekey")?;
    let newest = settings.token_encryption_keys[0].clone();
    let location = crate::app::store_location(settings);
    let opening = crate::app::store_opening(settings, now());
    let (store, _) = open_store_with(&location, cipher, StoreLimits::default(), &opening)
        .await
        .map_err(store_error)?;
    let rewritten = store.rekey().await.map_err(CliError::other)?;
    let newest_only = TokenCipher::new(&[newest]).map_err(CliError::other)?;
    let (store, _) = open_store_with(&location, newest_only, StoreLimits::default(), &opening)
        .await
        .map_err(store_error)?;
    let checked = store.verify_decryptable().await.map_err(CliError::other)?;
    println!(
        "re-encrypted {rewritten} values under the newest key; {checked} values verified with it alone"
    );
    Ok(())
}

/// `store migrate`: applies what is pending (after a backup on SQLite),
/// whatever `STORE_MIGRATE` says; `--check` only says what it would do.
pub(super) async fn migrate(settings: &Settings, check: bool) -> Result<(), CliError> {
    let location = crate::app::store_location(settings);
    if check {
        return check_migrations(&location).await;
    }
    let cipher = cipher(settings, "migrate")?;
    let mut opening = crate::app::store_opening(settings, now());
    opening.migrate = crate::store::schema::MigrateMode::Auto;
    let (store, report) = open_store_with(&location, cipher, StoreLimits::default(), &opening)
        .await
        .map_err(store_error)?;
    let checked = store.verify_decryptable().await.map_err(CliError::other)?;
    if let Some(backup) = &report.backup {
        println!("backed up before migrating: {}", backup.display());
    }
    for migration in &report.applied {
        println!("applied {}", describe(migration));
    }
    if report.applied.is_empty() {
        println!(
            "nothing to apply: the store is at schema {}{}",
            report.status.store,
            if report.serving_newer {
                " (newer than this binary's, which serves on it)"
            } else {
                ""
            }
        );
    }
    println!("{checked} encrypted values verified with TOKEN_ENCRYPTION_KEY");
    Ok(())
}

fn describe(migration: &KnownMigration) -> String {
    let oldest = migration.compatibility.oldest_reader();
    let readers = if oldest == SchemaLevel(0) {
        "expanding: binaries of every earlier schema serve on it".to_owned()
    } else {
        format!("contracting: binaries before schema {oldest} stop and name the way back")
    };
    format!("{} {} ({readers})", migration.level, migration.description)
}

/// `store migrate --check`: the store's level, what is pending, and
/// whether the binaries serving now can live with the migrated store.
async fn check_migrations(location: &crate::store::StoreLocation) -> Result<(), CliError> {
    let Some(inspection) = inspect_store(location, crate::build_info::VERSION)
        .await
        .map_err(store_error)?
    else {
        println!("no store yet: the first start (or `store migrate`) creates it");
        return Ok(());
    };
    let binary = crate::store::schema::binary_level();
    println!(
        "store at schema {}; this binary ({}) knows {binary}",
        inspection.store,
        crate::build_info::VERSION
    );
    match inspection.plan {
        SchemaPlan::Create { pending } | SchemaPlan::Migrate { pending, .. } => {
            for migration in &pending {
                println!("pending: {}", describe(migration));
            }
            let blocks_current = pending
                .iter()
                .any(|m| m.compatibility.oldest_reader() > inspection.store);
            if blocks_current {
                println!(
                    "binaries at schema {} (serving now) cannot serve once these are applied: stop them all before migrating, or upgrade in two releases",
                    inspection.store
                );
            } else {
                println!(
                    "binaries at schema {} (serving now) can serve once these are applied: a rolling upgrade is possible",
                    inspection.store
                );
            }
            Ok(())
        }
        SchemaPlan::UpToDate { .. } => {
            println!("nothing pending");
            Ok(())
        }
        SchemaPlan::ServeNewer { unknown, .. } => {
            println!(
                "the store is newer than this binary; it serves on it ({} newer migrations, each one it can live with)",
                unknown.len()
            );
            Ok(())
        }
        SchemaPlan::Refuse(refusal) => Err(CliError::Schema(refusal)),
    }
}

/// `store backup PATH`.
pub(super) async fn backup(settings: &Settings, path: &Path) -> Result<(), CliError> {
    let taken = crate::backup::take(settings, path, now())
        .await
        .map_err(CliError::other)?;
    let bytes: u64 = taken.manifest.files.iter().map(|f| f.bytes).sum();
    println!(
        "backup written to {}: store at schema {}, {} files of {bytes} bytes and their manifest",
        taken.folder.display(),
        SchemaLevel(taken.manifest.schema),
        taken.manifest.files.len(),
    );
    match &taken.audit {
        Some(report) => println!("audit log copied: {report}"),
        None => println!("no audit log in DATA_DIR to copy"),
    }
    println!(
        "restore with: aegis-gitea-mcp store restore {}",
        taken.folder.display()
    );
    Ok(())
}

/// `store restore PATH [--force]`.
pub(super) async fn restore(settings: &Settings, path: &Path, force: bool) -> Result<(), CliError> {
    let restored = crate::backup::restore(settings, path, force, now())
        .await
        .map_err(|err| match err {
            crate::backup::BackupFailure::Store(StoreError::Schema(refusal)) => {
                CliError::Schema(refusal)
            }
            other => CliError::other(other),
        })?;
    if let Some(aside) = &restored.moved_aside {
        println!("the store that was there is kept in {}", aside.display());
    }
    println!(
        "restored the store at schema {} taken at {} by {} ({})",
        SchemaLevel(restored.manifest.schema),
        chrono::DateTime::from_timestamp(restored.manifest.created_at, 0)
            .map(|t| t.to_rfc3339())
            .unwrap_or_default(),
        restored.manifest.binary_version,
        restored.manifest.reason,
    );
    if restored.audit_restored {
        println!("the audit log was restored from the backup (DATA_DIR had none)");
    } else {
        println!("the audit log in DATA_DIR was kept: it goes on from its last entry");
    }
    Ok(())
}
