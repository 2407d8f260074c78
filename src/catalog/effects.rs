//! What an operation does to Gitea's state, for the tool annotations that
//! let a client confirm the right calls: reads, writes that only add, and
//! writes that destroy, overwrite, merge, transfer or change permissions.
//!
//! # Rule
//!
//! 1. GET and HEAD read ([`Effect::Read`]).
//! 2. DELETE and PATCH are destructive: PATCH edits overwrite what was there.
//! 3. POST and PUT are destructive when a word of the operationId (split as
//!    the tool name is) is in [`DESTRUCTIVE_WORDS`]: `repoMergePullRequest`,
//!    `repoTransfer`, `repoUpdateFile`, `repoAddCollaborator`,
//!    `orgAddTeamMember`, `issueReplaceLabels`, `repoCreateBranchProtection`.
//! 4. POST and PUT are destructive too when they open a way in or out
//!    that was not there (the security review of issue 45, F5): a
//!    credential (`repoCreateKey`, a deploy key; `userCurrentPostKey`,
//!    `userCreateToken`, a runner registration token, an OAuth2
//!    application), a principal (`adminCreateUser`, `userAddEmail`, an
//!    address that can reset the password), a trigger (a webhook, its test
//!    delivery, `actionsDispatchWorkflow`, `actionsEnableWorkflow`,
//!    `adminCronRun`) or a copy outside (`repoAddPushMirror`): a word of
//!    [`OPENING_WORDS`], or one of [`OPENING_OPERATIONS`]. A prompt-injected
//!    agent would take exactly these steps; under `CONFIRM=destructive`
//!    they wait for the person.
//! 5. Every other POST and PUT only adds ([`Effect::Additive`]):
//!    `issueCreateIssue`, `issueCreateComment`, `repoCreateReleaseAttachment`,
//!    `userCurrentPutStar`.
//!
//! Idempotency follows the HTTP method (RFC 9110 §9.2.2): PUT and DELETE are
//! idempotent, POST and PATCH are not.

use super::naming::tool_name_for_operation_id;

/// What a call of the operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// GET/HEAD: changes nothing.
    Read,
    /// Creates, adds, comments, uploads: nothing that was there is lost.
    Additive,
    /// Deletes, overwrites, merges, transfers or changes who may do what.
    Destructive,
}

/// Words of an operationId that make a POST or PUT destructive: overwriting
/// (`update`, `edit`, `replace`, `rename`, `apply`, `change`, `set`,
/// `reset`, `convert`, `sync`), merging, transferring, removing, and
/// changing permissions (`collaborator`, `team`, `member`, `permission`,
/// `protection`, `block`, `lock`, `visibility`, `disable`, `revoke`).
pub const DESTRUCTIVE_WORDS: &[&str] = &[
    "apply",
    "archive",
    "block",
    "change",
    "collaborator",
    "convert",
    "delete",
    "disable",
    "dismiss",
    "edit",
    "lock",
    "member",
    "merge",
    "permission",
    "permissions",
    "protection",
    "reject",
    "remove",
    "rename",
    "reparent",
    "replace",
    "reset",
    "revoke",
    "set",
    "sync",
    "team",
    "transfer",
    "unarchive",
    "update",
    "visibility",
];

/// Words of an operationId that make a POST or PUT open a way in or out:
/// credentials (`key`, `token`, `oauth2`, `gpg`), an account's `email`,
/// triggers (`hook`, `dispatch`, `enable`, `cron`) and copies outside
/// (`mirror`).
pub const OPENING_WORDS: &[&str] = &[
    "cron", "dispatch", "email", "enable", "gpg", "hook", "key", "mirror", "oauth2", "token",
];

/// Operations that open a way in whose words do not say so: a new account.
pub const OPENING_OPERATIONS: &[&str] = &["adminCreateUser"];

/// The effect of an operation, per the module rule.
pub fn effect_of(method: &http::Method, operation_id: &str) -> Effect {
    match *method {
        http::Method::GET | http::Method::HEAD => Effect::Read,
        http::Method::DELETE | http::Method::PATCH => Effect::Destructive,
        _ => {
            let name = tool_name_for_operation_id(operation_id);
            let destructive = name
                .split('_')
                .skip(1)
                .any(|word| DESTRUCTIVE_WORDS.contains(&word) || OPENING_WORDS.contains(&word))
                || OPENING_OPERATIONS.contains(&operation_id);
            if destructive {
                Effect::Destructive
            } else {
                Effect::Additive
            }
        }
    }
}

/// PUT and DELETE are idempotent; GET and HEAD too, but a read needs no hint.
pub fn is_idempotent(method: &http::Method) -> bool {
    matches!(
        *method,
        http::Method::PUT | http::Method::DELETE | http::Method::GET | http::Method::HEAD
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn reads_are_reads() {
        assert_eq!(effect_of(&Method::GET, "repoGet"), Effect::Read);
        assert_eq!(effect_of(&Method::HEAD, "repoGet"), Effect::Read);
    }

    #[test]
    fn deletes_and_patches_are_destructive() {
        assert_eq!(
            effect_of(&Method::DELETE, "repoDelete"),
            Effect::Destructive
        );
        assert_eq!(
            effect_of(&Method::PATCH, "issueEditIssue"),
            Effect::Destructive
        );
    }

    #[test]
    fn writes_that_only_add_are_additive() {
        for id in [
            "issueCreateIssue",
            "issueCreateComment",
            "repoCreateReleaseAttachment",
            "repoCreateFile",
            "repoCreateBranch",
            "repoCreatePullReview",
            "issueAddLabel",
        ] {
            assert_eq!(effect_of(&Method::POST, id), Effect::Additive, "{id}");
        }
        assert_eq!(
            effect_of(&Method::PUT, "userCurrentPutStar"),
            Effect::Additive
        );
    }

    #[test]
    fn overwrites_merges_transfers_and_permission_changes_are_destructive() {
        for (method, id) in [
            (Method::POST, "repoMergePullRequest"),
            (Method::POST, "repoTransfer"),
            (Method::PUT, "repoUpdateFile"),
            (Method::PUT, "repoAddCollaborator"),
            (Method::PUT, "orgAddTeamMember"),
            (Method::PUT, "issueReplaceLabels"),
            (Method::POST, "repoCreateBranchProtection"),
            (Method::POST, "repoChangeFiles"),
            (Method::POST, "repoUpdatePullRequest"),
        ] {
            assert_eq!(effect_of(&method, id), Effect::Destructive, "{id}");
        }
    }

    /// The red team's F5 (issue 45): these only added, by their words, and
    /// never waited for their person under `CONFIRM=destructive`.
    #[test]
    fn writes_that_open_a_way_in_or_out_are_destructive() {
        for (method, id) in [
            (Method::POST, "repoCreateKey"),
            (Method::POST, "adminCreatePublicKey"),
            (Method::POST, "userCurrentPostKey"),
            (Method::POST, "userCurrentPostGPGKey"),
            (Method::POST, "userVerifyGPGKey"),
            (Method::POST, "userCreateToken"),
            (Method::POST, "repoCreateRunnerRegistrationToken"),
            (Method::POST, "orgCreateRunnerRegistrationToken"),
            (Method::POST, "adminCreateRunnerRegistrationToken"),
            (Method::POST, "userCreateRunnerRegistrationToken"),
            (Method::POST, "userCreateOAuth2Application"),
            (Method::POST, "adminCreateUser"),
            (Method::POST, "userAddEmail"),
            (Method::POST, "repoCreateHook"),
            (Method::POST, "orgCreateHook"),
            (Method::POST, "userCreateHook"),
            (Method::POST, "adminCreateHook"),
            (Method::POST, "repoTestHook"),
            (Method::POST, "ActionsDispatchWorkflow"),
            (Method::PUT, "ActionsEnableWorkflow"),
            (Method::POST, "adminCronRun"),
            (Method::POST, "repoAddPushMirror"),
        ] {
            assert_eq!(effect_of(&method, id), Effect::Destructive, "{id}");
        }
    }

    #[test]
    fn idempotency_follows_the_method() {
        assert!(is_idempotent(&Method::PUT));
        assert!(is_idempotent(&Method::DELETE));
        assert!(!is_idempotent(&Method::POST));
        assert!(!is_idempotent(&Method::PATCH));
    }
}
