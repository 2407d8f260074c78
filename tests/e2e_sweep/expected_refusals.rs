//! The sweep's allow-list of Gitea refusals.

use crate::classify::GENERIC_404;

/// Gitea refusals the sweep expects with the seeded data and the e2e
/// `app.ini`, as (tool, status, fragment of Gitea's message, reason). A
/// refusal not listed here, or with another status or message, fails the
/// sweep (a regression, or a new operation to judge); a listed tool that now
/// succeeds is reported as stale. Every one of these reached a real route:
/// Gitea's message is its handler's, or (for the generic message) the raw
/// answer was re-checked and is not the router's `404 page not found`.
pub const EXPECTED_REFUSALS: &[(&str, u16, &str, &str)] = &[
    // --- "no" answers of check endpoints (404 is the API's negative answer) ---
    (
        "gitea_org_is_public_member",
        404,
        "not found",
        "the admin's org membership is private (the default)",
    ),
    (
        "gitea_organization_check_user_block",
        404,
        GENERIC_404,
        "the org has not blocked alice; Gitea answers an empty-bodied 404",
    ),
    (
        "gitea_user_check_user_block",
        404,
        GENERIC_404,
        "the admin has not blocked alice; Gitea answers an empty-bodied 404",
    ),
    (
        "gitea_repo_check_collaborator",
        404,
        "not found",
        "alice is not a collaborator of the org repo",
    ),
    (
        "gitea_repo_pull_request_is_merged",
        404,
        "not found",
        "the seeded PR is open: 404 means `not merged`",
    ),
    (
        "gitea_user_check_following",
        404,
        "not found",
        "the admin does not follow alice",
    ),
    (
        "gitea_user_current_check_following",
        404,
        "not found",
        "the admin does not follow alice",
    ),
    (
        "gitea_user_current_check_starring",
        404,
        "not found",
        "the admin has not starred the repo",
    ),
    // --- objects the seed does not create ---
    (
        "gitea_get_annotated_tag",
        400,
        "object does not exist",
        "rel/1.0 is a lightweight tag (made by the release): there is no tag object; \
         the commit sha it points to is not a tag object",
    ),
    (
        "gitea_repo_get_commit_pull_request",
        404,
        "pull request does not exist",
        "Gitea looks PRs up by *merge* commit; the seeded PR is not merged",
    ),
    (
        "gitea_repo_get_note",
        404,
        "commit doesn't exist",
        "no git notes in the repo; Gitea words a missing note as `commit doesn't exist`",
    ),
    (
        "gitea_repo_get_editor_config",
        404,
        "rel_path: .editorconfig",
        "the repo has no .editorconfig (the message proves the route matched)",
    ),
    (
        "gitea_repo_get_wiki_pages",
        404,
        "no such file or directory",
        "the repo has no wiki",
    ),
    // --- instance configuration ---
    (
        "gitea_get_signing_key",
        404,
        "no signing key",
        "no instance signing key is configured",
    ),
    (
        "gitea_get_signing_key_ssh",
        404,
        "no signing key",
        "no instance signing key is configured",
    ),
    (
        "gitea_repo_signing_key",
        404,
        "no signing key",
        "no instance signing key is configured",
    ),
    (
        "gitea_repo_signing_key_ssh",
        404,
        "no signing key",
        "no instance signing key is configured",
    ),
    (
        "gitea_repo_get_git_hook",
        403,
        "must be allowed to edit Git hooks",
        "[security] DISABLE_GIT_HOOKS defaults to true: nobody may edit git hooks",
    ),
    (
        "gitea_repo_list_git_hooks",
        403,
        "must be allowed to edit Git hooks",
        "[security] DISABLE_GIT_HOOKS defaults to true: nobody may edit git hooks",
    ),
    (
        "gitea_user_get_tokens",
        401,
        "auth required",
        "listing tokens needs basic auth (the user's password), never a token",
    ),
];
