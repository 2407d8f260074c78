//! Encryption keys of the store: `store rekey` moves every value to the
//! newest key, and a store that no configured key decrypts stops startup
//! without losing anything.

use aegis_gitea_mcp::app::App;
use aegis_gitea_mcp::config::{Settings, SettingsSource};
use assert_cmd::Command;
use reqwest::StatusCode;
use serde_json::json;

use crate::authorize::restarted;
use crate::{ENCRYPTION_KEY, OAuthGateway, on_both_backends};

const NEW_KEY: &str = "the-newer-encryption-key-9876543210-abcdef";
const UNRELATED_KEY: &str = "an-unrelated-encryption-key-000000000000";

fn with_keys(gateway: &OAuthGateway, keys: &str) -> Vec<(String, String)> {
    let mut settings = gateway.settings.clone();
    settings.retain(|(k, _)| k != "TOKEN_ENCRYPTION_KEY");
    settings.push(("TOKEN_ENCRYPTION_KEY".into(), keys.into()));
    settings
}

async fn build(settings: &[(String, String)]) -> Result<(), String> {
    let settings = Settings::from_source(&SettingsSource::from_pairs(settings.to_vec())).unwrap();
    App::build(settings)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

async fn rekey_moves_every_value_to_the_newest_key(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;

    let rotated = with_keys(&gateway, &format!("{NEW_KEY},{ENCRYPTION_KEY}"));
    let output = Command::cargo_bin("aegis-gitea-mcp")
        .unwrap()
        .args(["store", "rekey"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(rotated.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(gateway.data_dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("re-encrypted"), "{stdout}");

    // Startup decrypts every stored value: it now succeeds with the new key
    // alone, and fails with the old key alone (the values really moved).
    build(&with_keys(&gateway, NEW_KEY)).await.unwrap();
    let err = build(&with_keys(&gateway, ENCRYPTION_KEY))
        .await
        .unwrap_err();
    assert!(err.contains("could not be decrypted"), "{err}");
    // A gateway on the new key serves the user's stored Gitea session.
    let newest_only = restarted(&gateway, with_keys(&gateway, NEW_KEY)).await;
    let again = newest_only.public_client().await;
    let fresh = newest_only.tokens(&again, "alice").await;
    let (status, _) = newest_only
        .call_tool(&fresh.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    drop(tokens);
}
on_both_backends!(rekey_moves_every_value_to_the_newest_key);

async fn a_store_no_key_decrypts_stops_startup_and_is_kept(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    gateway.tokens(&client, "alice").await;
    let err = build(&with_keys(&gateway, UNRELATED_KEY))
        .await
        .unwrap_err();
    assert!(err.contains("could not be decrypted"), "{err}");
    assert!(err.contains("grants"), "{err}");
    assert!(!err.contains(ENCRYPTION_KEY) && !err.contains(UNRELATED_KEY));
    // Nothing was wiped: the right key still opens it.
    build(&gateway.settings).await.unwrap();
}
on_both_backends!(a_store_no_key_decrypts_stops_startup_and_is_kept);
