use std::os::unix::fs::PermissionsExt;

use secrecy::ExposeSecret;

use super::*;

const BEARER: &str = "0123456789abcdef0123456789abcdef";

fn settings(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    let mut all = vec![("GITEA_URL", "http://127.0.0.1:3000")];
    all.extend_from_slice(pairs);
    Settings::from_source(&SettingsSource::from_pairs(all.iter().copied()))
}

#[test]
fn defaults_bind_loopback_on_8080() {
    let s = settings(&[]).unwrap();
    assert_eq!(s.mcp_host.to_string(), "127.0.0.1");
    assert_eq!(s.mcp_port, 8080);
    assert_eq!(s.public_base_url.as_str(), "http://127.0.0.1:8080/");
    assert_eq!(s.exposure.tool_mode, ToolMode::Core);
    assert!(s.exposure.raw_api_enabled);
    assert!(!s.exposure.raw_api_allow_sensitive);
    assert_eq!(s.limits, Limits::default());
    assert_eq!(s.secret_detection_mode, SecretDetectionMode::Mask);
}

#[test]
fn gitea_url_is_required() {
    let err = Settings::from_source(&SettingsSource::default()).unwrap_err();
    assert_eq!(err.setting, "GITEA_URL");
}

#[test]
fn gitea_api_base_has_no_double_slash() {
    let s = settings(&[("GITEA_URL", "https://git.example.com/sub/")]).unwrap();
    assert_eq!(s.gitea_api_base(), "https://git.example.com/sub/api/v1");
}

#[test]
fn short_bearer_is_refused_without_echoing_it() {
    let err = settings(&[("MCP_BEARER_TOKEN", "short-secret-value")]).unwrap_err();
    assert_eq!(err.setting, "MCP_BEARER_TOKEN");
    assert!(!err.to_string().contains("short-secret-value"));
}

#[test]
fn bearer_of_32_chars_is_accepted() {
    let s = settings(&[("MCP_BEARER_TOKEN", BEARER)]).unwrap();
    assert_eq!(s.mcp_bearer_token.unwrap().expose_secret(), BEARER);
}

#[test]
fn debug_output_never_shows_secrets() {
    let s = settings(&[
        ("MCP_BEARER_TOKEN", BEARER),
        ("GITEA_TOKEN", "gitea-admin-token-xyz"),
    ])
    .unwrap();
    let debug = format!("{s:?}");
    assert!(!debug.contains(BEARER));
    assert!(!debug.contains("gitea-admin-token-xyz"));
}

#[test]
fn non_loopback_public_url_must_be_https() {
    let err = settings(&[("PUBLIC_BASE_URL", "http://mcp.example.com")]).unwrap_err();
    assert_eq!(err.setting, "PUBLIC_BASE_URL");
    assert!(settings(&[("PUBLIC_BASE_URL", "https://mcp.example.com")]).is_ok());
}

#[test]
fn non_loopback_bind_without_bearer_fails_serve_check() {
    let s = settings(&[("MCP_HOST", "0.0.0.0"), ("GITEA_TOKEN", "t")]).unwrap();
    assert_eq!(s.check_for_serve().unwrap_err().setting, "MCP_HOST");
    let s = settings(&[
        ("MCP_HOST", "0.0.0.0"),
        ("GITEA_TOKEN", "t"),
        ("MCP_BEARER_TOKEN", BEARER),
    ])
    .unwrap();
    assert!(s.check_for_serve().is_ok());
}

#[test]
fn loopback_mode_is_refused_behind_a_public_url_or_a_proxy() {
    let s = settings(&[
        ("GITEA_TOKEN", "t"),
        ("PUBLIC_BASE_URL", "https://mcp.example.com"),
    ])
    .unwrap();
    assert_eq!(s.check_for_serve().unwrap_err().setting, "PUBLIC_BASE_URL");
    let s = settings(&[("GITEA_TOKEN", "t"), ("FORWARDED_ALLOW_IPS", "127.0.0.1")]).unwrap();
    assert_eq!(
        s.check_for_serve().unwrap_err().setting,
        "FORWARDED_ALLOW_IPS"
    );
    // Authentication configured: both are fine.
    let s = settings(&[
        ("GITEA_TOKEN", "t"),
        ("MCP_BEARER_TOKEN", BEARER),
        ("PUBLIC_BASE_URL", "https://mcp.example.com"),
        ("FORWARDED_ALLOW_IPS", "127.0.0.1"),
    ])
    .unwrap();
    assert!(s.check_for_serve().is_ok());
    // The development default still starts.
    assert!(
        settings(&[("GITEA_TOKEN", "t")])
            .unwrap()
            .check_for_serve()
            .is_ok()
    );
}

const OAUTH: &[(&str, &str)] = &[
    ("GITEA_OAUTH_CLIENT_ID", "id"),
    ("GITEA_OAUTH_CLIENT_SECRET", "secret"),
    (
        "TOKEN_ENCRYPTION_KEY",
        "config-test-key-0123456789abcdef-xyz",
    ),
];

#[test]
fn oauth_alone_authenticates_a_public_bind_without_an_admin_token() {
    let mut pairs = vec![
        ("MCP_HOST", "0.0.0.0"),
        ("PUBLIC_BASE_URL", "https://mcp.example.com"),
    ];
    pairs.extend_from_slice(OAUTH);
    let s = settings(&pairs).unwrap();
    assert!(s.check_for_serve().is_ok());
}

#[test]
fn the_static_bearer_still_needs_the_admin_token_beside_oauth() {
    let mut pairs = vec![("MCP_BEARER_TOKEN", BEARER)];
    pairs.extend_from_slice(OAUTH);
    let s = settings(&pairs).unwrap();
    assert_eq!(s.check_for_serve().unwrap_err().setting, "GITEA_TOKEN");
}

#[test]
fn a_bearer_that_looks_like_an_oauth_token_is_refused() {
    let err =
        settings(&[("MCP_BEARER_TOKEN", "agm_0123456789abcdef0123456789abcdef")]).unwrap_err();
    assert_eq!(err.setting, "MCP_BEARER_TOKEN");
}

#[test]
fn invalid_boolean_names_the_setting() {
    let err = settings(&[("READ_ONLY", "maybe")]).unwrap_err();
    assert_eq!(err, ConfigError::new("READ_ONLY", "must be true or false"));
}

#[test]
fn lists_are_trimmed_and_empty_entries_dropped() {
    let s = settings(&[
        ("TOOLSETS", " issue, ,repository "),
        ("DISABLED_TOOLS", "a,b"),
    ])
    .unwrap();
    assert_eq!(
        s.exposure.toolsets,
        Some(vec!["issue".to_owned(), "repository".to_owned()])
    );
    assert_eq!(s.exposure.disabled_tools, vec!["a", "b"]);
}

#[test]
fn empty_toolsets_is_refused() {
    assert_eq!(
        settings(&[("TOOLSETS", " , ")]).unwrap_err().setting,
        "TOOLSETS"
    );
}

#[test]
fn oauth_scopes_must_be_granular() {
    assert!(settings(&[("OAUTH_SCOPES", "read:repository,write:issue")]).is_ok());
    for bad in ["all", "openid", "read:everything", "", "admin:repository"] {
        let err = settings(&[("OAUTH_SCOPES", bad)]).unwrap_err();
        assert_eq!(err.setting, "OAUTH_SCOPES", "{bad}");
    }
}

#[test]
fn oauth_client_needs_both_halves_and_a_key() {
    assert!(settings(&[("GITEA_OAUTH_CLIENT_ID", "id")]).is_err());
    let err = settings(&[
        ("GITEA_OAUTH_CLIENT_ID", "id"),
        ("GITEA_OAUTH_CLIENT_SECRET", "secret"),
    ])
    .unwrap_err();
    assert_eq!(err.setting, "TOKEN_ENCRYPTION_KEY");
}

#[test]
fn the_read_application_needs_both_halves_and_its_own_id() {
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut pairs = OAUTH.to_vec();
        pairs.extend_from_slice(extra);
        settings(&pairs)
    };
    let s = with(&[
        ("GITEA_OAUTH_READ_CLIENT_ID", "read-id"),
        ("GITEA_OAUTH_READ_CLIENT_SECRET", "read-secret"),
    ])
    .unwrap();
    assert_eq!(s.gitea_oauth_read_client.unwrap().0, "read-id");
    for bad in [
        &[("GITEA_OAUTH_READ_CLIENT_ID", "read-id")][..],
        &[
            ("GITEA_OAUTH_READ_CLIENT_ID", "id"),
            ("GITEA_OAUTH_READ_CLIENT_SECRET", "s"),
        ],
    ] {
        assert_eq!(with(bad).unwrap_err().setting, "GITEA_OAUTH_READ_CLIENT_ID");
    }
    let alone = settings(&[
        ("GITEA_OAUTH_READ_CLIENT_ID", "read-id"),
        ("GITEA_OAUTH_READ_CLIENT_SECRET", "read-secret"),
    ])
    .unwrap_err();
    assert_eq!(alone.setting, "GITEA_OAUTH_READ_CLIENT_ID");
}

#[test]
fn numeric_bounds_are_range_checked() {
    assert_eq!(
        settings(&[("MAX_TOOL_RESPONSE_ITEMS", "0")])
            .unwrap_err()
            .setting,
        "MAX_TOOL_RESPONSE_ITEMS"
    );
    assert_eq!(
        settings(&[("MAX_BINARY_BYTES", "lots")])
            .unwrap_err()
            .setting,
        "MAX_BINARY_BYTES"
    );
}

#[test]
fn rate_limits_default_validate_and_zero_disables() {
    let s = settings(&[]).unwrap();
    assert_eq!(s.rate_limits, RateLimits::default());
    assert!(s.rate_limits.per_ip > 0 && s.rate_limits.per_token > 0);
    assert_eq!(s.rate_limits.sign_ins_per_ip, 20);
    let s = settings(&[("RATE_LIMIT_SIGN_INS_PER_IP", "0")]).unwrap();
    assert_eq!(s.rate_limits.sign_ins_per_ip, 0);
    let s = settings(&[("RATE_LIMIT_PER_IP", "0"), ("RATE_LIMIT_PER_TOKEN", " 7 ")]).unwrap();
    assert_eq!(s.rate_limits.per_ip, 0);
    assert_eq!(s.rate_limits.per_token, 7);
    for (name, value) in [
        ("RATE_LIMIT_PER_IP", "-1"),
        ("RATE_LIMIT_PER_IP", "many"),
        ("RATE_LIMIT_PER_TOKEN", "1000001"),
        ("RATE_LIMIT_SIGN_INS_PER_IP", "lots"),
    ] {
        let err = settings(&[(name, value)]).unwrap_err();
        assert_eq!(err.setting, name);
        assert!(!err.rule.contains(value.trim()), "never echoes the value");
    }
}

#[test]
fn forwarded_allow_ips_accepts_addresses_and_cidrs() {
    let s = settings(&[("FORWARDED_ALLOW_IPS", "10.0.0.1, 192.168.0.0/16")]).unwrap();
    assert_eq!(s.forwarded_allow_ips.len(), 2);
    assert!(settings(&[("FORWARDED_ALLOW_IPS", "nonsense")]).is_err());
}

#[test]
fn known_secrets_lists_every_configured_secret() {
    let mut pairs = OAUTH.to_vec();
    pairs.extend_from_slice(&[
        ("MCP_BEARER_TOKEN", BEARER),
        ("GITEA_TOKEN", "admin-tok"),
        ("GITEA_OAUTH_READ_CLIENT_ID", "read-id"),
        ("GITEA_OAUTH_READ_CLIENT_SECRET", "read-app-secret"),
    ]);
    let s = settings(&pairs).unwrap();
    let secrets: Vec<String> = s
        .known_secrets()
        .iter()
        .map(|k| k.expose_secret().to_owned())
        .collect();
    for secret in [BEARER, "admin-tok", "secret", "read-app-secret"] {
        assert!(secrets.contains(&secret.to_owned()), "{secret}");
    }
}

/// F9: the password of `DATABASE_URL` is redacted from results too.
#[test]
fn known_secrets_include_the_database_password() {
    let s = settings(&[(
        "DATABASE_URL",
        "postgres://aegis:pa%24%24word-4711@db.internal/aegis",
    )])
    .unwrap();
    let secrets: Vec<String> = s
        .known_secrets()
        .iter()
        .map(|k| k.expose_secret().to_owned())
        .collect();
    assert!(
        secrets.contains(&"pa$$word-4711".to_owned()),
        "{}",
        secrets.len()
    );
}

fn write_env(dir: &std::path::Path, mode: u32) -> std::path::PathBuf {
    let path = dir.join(".env");
    std::fs::write(&path, "GITEA_URL=http://from-file:3000\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn dot_env_with_mode_0600_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_env(dir.path(), 0o600);
    assert_eq!(
        select_env_file(None, dir.path()).unwrap(),
        EnvFileChoice::Use(path)
    );
}

#[test]
fn group_readable_dot_env_is_ignored_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    write_env(dir.path(), 0o640);
    match select_env_file(None, dir.path()).unwrap() {
        EnvFileChoice::None { ignored: Some(why) } => assert!(why.contains("0600")),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn symlinked_dot_env_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.env");
    std::fs::write(&real, "GITEA_URL=http://x\n").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join(".env")).unwrap();
    match select_env_file(None, dir.path()).unwrap() {
        EnvFileChoice::None { ignored: Some(why) } => assert!(why.contains("symlink")),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn missing_explicit_env_file_is_an_error() {
    let err = select_env_file(
        Some(std::path::Path::new("/nonexistent/x.env")),
        std::path::Path::new("/"),
    )
    .unwrap_err();
    assert_eq!(err.setting, "AEGIS_ENV_FILE");
}

#[test]
fn env_file_values_are_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gw.env");
    std::fs::write(&path, "AEGIS_TEST_ONLY_SETTING=from-file\n").unwrap();
    let source = SettingsSource::load(&EnvFileChoice::Use(path)).unwrap();
    assert_eq!(source.get("AEGIS_TEST_ONLY_SETTING"), Some("from-file"));
}

/// A broken env file is named with the line and the problem, never the
/// line's text (`SECRET-VALUE` stands for what it may hold).
fn env_file_error_for(content: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gw.env");
    std::fs::write(&path, content).unwrap();
    let err = SettingsSource::load(&EnvFileChoice::Use(path.clone())).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.setting, "AEGIS_ENV_FILE");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(!text.contains("SECRET-VALUE"), "{text}");
    text
}

#[test]
fn an_env_file_line_without_equals_is_named_by_number() {
    let text = env_file_error_for(b"GITEA_URL=http://x\n# fine\nSECRET-VALUE\n");
    assert!(text.contains("line 3: not KEY=VALUE (no `=`)"), "{text}");
}

#[test]
fn an_unterminated_quote_is_named_by_number() {
    let text = env_file_error_for(b"A=1\nGITEA_TOKEN=\"SECRET-VALUE\nB=2\n");
    assert!(
        text.contains("line 2: a quote that is never closed"),
        "{text}"
    );
}

#[test]
fn an_unquoted_space_is_named_by_number() {
    let text = env_file_error_for(b"A=1\nB=2\nGITEA_TOKEN=SECRET-VALUE and more\n");
    assert!(
        text.contains("line 3: a space in an unquoted value"),
        "{text}"
    );
}

#[test]
fn binary_junk_is_named_by_number() {
    let text = env_file_error_for(b"A=1\nB=SECRET-VALUE\xff\xfe\x00\n");
    assert!(text.contains("line 2: not UTF-8 text"), "{text}");
}

#[test]
fn short_key_material_is_refused_by_name() {
    for setting in ["TOKEN_ENCRYPTION_KEY", "AUDIT_HMAC_KEY"] {
        let err = settings(&[(setting, "short-key")]).unwrap_err();
        assert_eq!(err.setting, setting);
        assert!(!err.to_string().contains("short-key"));
    }
    let long = "k".repeat(32);
    assert!(settings(&[("TOKEN_ENCRYPTION_KEY", &format!("{long},{long}"))]).is_ok());
}

#[test]
fn audit_max_bytes_defaults_to_64_mib_and_is_bounded() {
    let s = settings(&[]).unwrap();
    assert_eq!(s.audit_max_bytes, 64 * 1024 * 1024);
    let s = settings(&[("AUDIT_MAX_BYTES", "1048576")]).unwrap();
    assert_eq!(s.audit_max_bytes, 1_048_576);
    let err = settings(&[("AUDIT_MAX_BYTES", "12")]).unwrap_err();
    assert_eq!(err.setting, "AUDIT_MAX_BYTES");
}

#[test]
fn audit_sync_defaults_to_an_interval_of_50_ms() {
    let s = settings(&[]).unwrap();
    assert_eq!(s.audit_sync, AuditSync::Interval(Duration::from_millis(50)));
    let s = settings(&[("AUDIT_SYNC_INTERVAL_MS", "200")]).unwrap();
    assert_eq!(
        s.audit_sync,
        AuditSync::Interval(Duration::from_millis(200))
    );
}

#[test]
fn audit_sync_always_waits_for_the_disk() {
    let s = settings(&[("AUDIT_SYNC", "always")]).unwrap();
    assert_eq!(s.audit_sync, AuditSync::Always);
    assert!(s.audit_sync.waits());
}

#[test]
fn audit_sync_refuses_unknown_policies_and_intervals_out_of_range() {
    for (name, value) in [
        ("AUDIT_SYNC", "never"),
        ("AUDIT_SYNC_INTERVAL_MS", "0"),
        ("AUDIT_SYNC_INTERVAL_MS", "10001"),
    ] {
        let err = settings(&[(name, value)]).unwrap_err();
        assert_eq!(err.setting, name);
    }
}
