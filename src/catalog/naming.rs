//! Tool names: the one rule that turns an OpenAPI `operationId` into an MCP
//! tool name. Operators put these names in `DISABLED_TOOLS` and clients cache
//! them, so the rule is part of the public surface and must stay stable.
//!
//! # Rule
//!
//! `gitea_` followed by the operationId in snake_case, where words are split
//! as follows:
//!
//! 0. A few operationIds have a fixed name instead (`RENAMED_OPERATIONS`).
//!    Gitea 1.27 has `userGetOauth2Application` (*list* the user's OAuth2
//!    applications) next to `userGetOAuth2Application` (get one by id); under
//!    rule 1 both would be `gitea_user_get_oauth2_application`, so the list
//!    operation is named for what it does: `gitea_user_list_oauth2_applications`
//!    (which is also what a corrected operationId would give).
//! 1. The mixed-case initialism `OAuth` counts as one word (`Oauth`), so
//!    `userCreateOAuth2Application` and `userGetOauth2Application` agree on
//!    `oauth2`.
//! 2. A new word starts at an uppercase letter that follows a lowercase letter
//!    or a digit (`userCreate` → `user_create`, `2Application` → `2_application`).
//! 3. In a run of uppercase letters (an acronym), a new word starts at the last
//!    uppercase letter when a lowercase letter follows it
//!    (`GPGKeys` → `gpg_keys`, `RawFileOrLFS` → `raw_file_or_lfs`).
//! 4. Digits stay with the word before them (`oauth2`, `v1`).
//! 5. Every character outside `[A-Za-z0-9]` is a word separator; separators
//!    never repeat and never lead or trail.
//! 6. Everything is lowercased.
//!
//! MCP clients cap tool names at 64 characters. A name that would be longer is
//! cut to 55 characters and given `_` plus 8 hex digits of the FNV-1a hash of
//! the full operationId, so it stays unique and stable. An operationId with no
//! usable character becomes `gitea_op_` plus that hash. No Gitea 1.27 operation
//! needs either fallback (the longest name is 44 characters).

/// Prefix of every generated tool name.
pub const TOOL_NAME_PREFIX: &str = "gitea_";

/// Longest tool name MCP clients accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Operation ids whose snake_case name collides with another operation's,
/// and the name (without prefix) they get instead.
const RENAMED_OPERATIONS: &[(&str, &str)] =
    &[("userGetOauth2Application", "user_list_oauth2_applications")];

/// Mixed-case initialisms that rule 3 would split in the wrong place, with the
/// spelling that makes them one word.
const ONE_WORD_INITIALISMS: &[(&str, &str)] = &[("OAuth", "Oauth")];

/// The tool name for an operationId, e.g. `userCreateToken` → `gitea_user_create_token`.
/// Always matches `^[a-z0-9_]{1,64}$`.
pub fn tool_name_for_operation_id(operation_id: &str) -> String {
    if let Some((_, name)) = RENAMED_OPERATIONS
        .iter()
        .find(|(id, _)| *id == operation_id)
    {
        return format!("{TOOL_NAME_PREFIX}{name}");
    }
    let snake = snake_case(operation_id);
    if snake.is_empty() {
        return format!("{TOOL_NAME_PREFIX}op_{:08x}", fnv1a(operation_id));
    }
    let name = format!("{TOOL_NAME_PREFIX}{snake}");
    if name.len() <= MAX_TOOL_NAME_LEN {
        return name;
    }
    // Keep the readable start; the hash of the whole id keeps it unique.
    let suffix = format!("_{:08x}", fnv1a(operation_id));
    let mut head = name[..MAX_TOOL_NAME_LEN - suffix.len()].to_string();
    while head.ends_with('_') {
        head.pop();
    }
    head + &suffix
}

/// camelCase / PascalCase / anything → snake_case, per the module rule.
fn snake_case(id: &str) -> String {
    let mut normalized = id.to_string();
    for (from, to) in ONE_WORD_INITIALISMS {
        normalized = normalized.replace(from, to);
    }
    let chars: Vec<char> = normalized.chars().collect();
    let mut out = String::with_capacity(chars.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            push_separator(&mut out);
            continue;
        }
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            let starts_word = prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_is_lower);
            if starts_word {
                push_separator(&mut out);
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

fn push_separator(out: &mut String) {
    if !out.is_empty() && !out.ends_with('_') {
        out.push('_');
    }
}

/// 32-bit FNV-1a: tiny, dependency-free and stable across Rust releases
/// (unlike `DefaultHasher`), which is what a name suffix needs.
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
/// Whether `name` is an acceptable tool name (`^[a-z0-9_]{1,64}$`).
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_becomes_prefixed_snake_case() {
        assert_eq!(
            tool_name_for_operation_id("userCreateToken"),
            "gitea_user_create_token"
        );
        assert_eq!(
            tool_name_for_operation_id("repoMigrate"),
            "gitea_repo_migrate"
        );
        assert_eq!(
            tool_name_for_operation_id("adminCronList"),
            "gitea_admin_cron_list"
        );
        assert_eq!(
            tool_name_for_operation_id("orgListActionsSecrets"),
            "gitea_org_list_actions_secrets"
        );
    }

    #[test]
    fn acronyms_are_one_word() {
        assert_eq!(
            tool_name_for_operation_id("repoGetRawFileOrLFS"),
            "gitea_repo_get_raw_file_or_lfs"
        );
        assert_eq!(
            tool_name_for_operation_id("getGeneralAPISettings"),
            "gitea_get_general_api_settings"
        );
        assert_eq!(
            tool_name_for_operation_id("userCurrentListGPGKeys"),
            "gitea_user_current_list_gpg_keys"
        );
        assert_eq!(
            tool_name_for_operation_id("repoGetByID"),
            "gitea_repo_get_by_id"
        );
        assert_eq!(
            tool_name_for_operation_id("repoSigningKeySSH"),
            "gitea_repo_signing_key_ssh"
        );
    }

    #[test]
    fn oauth_and_digits_stay_together() {
        assert_eq!(
            tool_name_for_operation_id("userCreateOAuth2Application"),
            "gitea_user_create_oauth2_application"
        );
        assert_eq!(
            tool_name_for_operation_id("userGetOAuth2Application"),
            "gitea_user_get_oauth2_application"
        );
    }

    #[test]
    fn colliding_list_operation_has_a_fixed_name() {
        assert_eq!(
            tool_name_for_operation_id("userGetOauth2Application"),
            "gitea_user_list_oauth2_applications"
        );
    }

    #[test]
    fn leading_capital_and_separators_are_normalized() {
        assert_eq!(
            tool_name_for_operation_id("ActionsDispatchWorkflow"),
            "gitea_actions_dispatch_workflow"
        );
        assert_eq!(
            tool_name_for_operation_id("get-blob..v2_"),
            "gitea_get_blob_v2"
        );
        assert_eq!(tool_name_for_operation_id("Über"), "gitea_ber");
    }

    #[test]
    fn overlong_names_are_cut_with_a_stable_hash() {
        let id = "a".repeat(40) + "VeryLongOperationIdentifierThatKeepsGoing";
        let name = tool_name_for_operation_id(&id);
        assert_eq!(name.len(), MAX_TOOL_NAME_LEN);
        assert!(is_valid_tool_name(&name), "{name}");
        assert_eq!(name, tool_name_for_operation_id(&id));
        assert_ne!(name, tool_name_for_operation_id(&(id + "X")));
    }

    #[test]
    fn unusable_ids_get_a_hash_name() {
        let name = tool_name_for_operation_id("---");
        assert!(
            name.starts_with("gitea_op_") && is_valid_tool_name(&name),
            "{name}"
        );
    }
}
