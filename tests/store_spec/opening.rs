//! Opening the store: migrations on reopen, the backend, and (SQLite only)
//! the database file's protection.

use super::fixture::*;

pub async fn migrations_apply_again_on_reopen(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_client(&client("c1", NOW), None, NOW)
        .await
        .unwrap();
    drop(store);
    let store = f.open().await;
    assert!(store.get_client("c1").await.unwrap().is_some());
    drop(store);
    let store = f.open().await;
    assert_eq!(store.list_clients().await.unwrap().len(), 1);
}

pub async fn reports_its_backend_and_answers_ping(f: &Fixture) {
    let store = f.open().await;
    assert_eq!(store.backend(), f.backend());
    store.ping().await.unwrap();
}

pub mod sqlite_file {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn database_file_and_data_dir_are_owner_only() {
        let f = Fixture::sqlite();
        let store = f.open().await;
        store
            .insert_client(&client("c1", NOW), None, NOW)
            .await
            .unwrap();
        let file = f.location().sqlite_file().unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        for suffix in ["-wal", "-shm"] {
            let sidecar = std::path::PathBuf::from(format!("{}{suffix}", file.display()));
            if sidecar.exists() {
                assert_eq!(mode(&sidecar), 0o600, "{suffix}");
            }
        }
    }

    #[tokio::test]
    async fn an_existing_file_readable_by_others_is_tightened() {
        let f = Fixture::sqlite();
        drop(f.open().await);
        let file = f.location().sqlite_file().unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        drop(f.open().await);
        assert_eq!(mode(&file), 0o600);
    }

    #[tokio::test]
    async fn a_symlinked_database_file_is_refused() {
        let f = Fixture::sqlite();
        let file = f.location().sqlite_file().unwrap();
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let elsewhere = file.with_file_name("elsewhere.db");
        std::fs::write(&elsewhere, b"").unwrap();
        std::os::unix::fs::symlink(&elsewhere, &file).unwrap();
        let keys = [SecretString::from(KEY_A)];
        let cipher = TokenCipher::new(&keys).unwrap();
        let err = open_store(f.location(), cipher, StoreLimits::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, StoreError::Open(ref m) if m.contains("symlink")),
            "{err}"
        );
    }
}
