//! What an operation is for, in a person's words, where Gitea's summary
//! says how it works ("Merge PR's baseBranch into headBranch") or says
//! little ("Get a hook"). A purpose is searched like a summary and shown as
//! the search result's `does`, so the model reads what it found in the
//! words it asked with. Written by hand from the operations' documented
//! behaviour, never from an evaluation query.

/// (tool name, purpose). Each names an operation of the bundled catalog
/// (tested).
const PURPOSES: &[(&str, &str)] = &[
    // Pull requests and reviews.
    (
        "gitea_repo_update_pull_request",
        "Update a pull request's branch with the latest changes of its base branch (merge or rebase), to catch up when it is behind",
    ),
    (
        "gitea_repo_get_reviewers",
        "List the people who can be asked or requested to review pull requests in a repository",
    ),
    (
        "gitea_repo_create_pull_review_requests",
        "Ask people or teams to review a pull request (request reviewers)",
    ),
    (
        "gitea_repo_delete_pull_review_requests",
        "Withdraw a review request from people or teams on a pull request",
    ),
    (
        "gitea_repo_create_pull_review",
        "Review a pull request: approve it, request changes or comment, with inline comments on lines",
    ),
    (
        "gitea_repo_submit_pull_review",
        "Submit a pending (draft) review of a pull request",
    ),
    (
        "gitea_repo_pull_request_is_merged",
        "Tell whether a pull request was merged",
    ),
    (
        "gitea_repo_merge_pull_request",
        "Merge a pull request (merge, squash, rebase or fast-forward), now or when checks pass",
    ),
    (
        "gitea_repo_cancel_scheduled_auto_merge",
        "Stop a pull request from merging automatically when its checks pass",
    ),
    (
        "gitea_repo_get_pull_request_files",
        "Which files a pull request changes, with additions and deletions",
    ),
    (
        "gitea_repo_download_pull_diff_or_patch",
        "The diff or patch of a pull request, as text",
    ),
    (
        "gitea_repo_get_pull_request_by_base_head",
        "Find the pull request from one branch into another",
    ),
    (
        "gitea_repo_edit_pull_request",
        "Change a pull request: title, description, base branch, assignees, labels, milestone; close or reopen it",
    ),
    (
        "gitea_repo_dismiss_pull_review",
        "Dismiss a review so that it no longer counts toward approvals",
    ),
    (
        "gitea_repo_resolve_pull_review_comment",
        "Mark a review comment's conversation as resolved",
    ),
    (
        "gitea_repo_get_commit_pull_request",
        "Which pull request brought a commit in",
    ),
    // Issues.
    (
        "gitea_issue_edit_issue",
        "Change an issue: title, description, assignees, milestone, due date; close or reopen it",
    ),
    (
        "gitea_issue_get_comments_and_timeline",
        "An issue's or pull request's whole history: comments and events (labels, assignments, references, state changes)",
    ),
    (
        "gitea_issue_create_issue_attachment",
        "Attach a file to an issue (upload an attachment)",
    ),
    (
        "gitea_issue_create_issue_comment_attachment",
        "Attach a file to a comment (upload an attachment)",
    ),
    (
        "gitea_issue_lock_issue",
        "Lock an issue's conversation so that only collaborators can comment",
    ),
    (
        "gitea_issue_create_issue_dependencies",
        "Mark an issue as depending on (blocked by) another issue",
    ),
    (
        "gitea_issue_list_issue_dependencies",
        "The issues an issue depends on, which block it",
    ),
    (
        "gitea_issue_search_issues",
        "Find issues and pull requests across every repository I can see, by words, state, labels or who is involved",
    ),
    ("gitea_issue_add_time", "Log time spent working on an issue"),
    (
        "gitea_issue_replace_labels",
        "Set an issue's labels to exactly these, replacing the others",
    ),
    (
        "gitea_issue_edit_issue_deadline",
        "Set or clear the due date of an issue",
    ),
    (
        "gitea_repo_get_assignees",
        "The people an issue or pull request can be assigned to in a repository",
    ),
    (
        "gitea_issue_get_repo_comments",
        "The comments of every issue and pull request in a repository, newest activity first",
    ),
    // Files and content.
    (
        "gitea_repo_get_contents",
        "Read a file's content or list a folder's entries, at a branch, tag or commit",
    ),
    (
        "gitea_repo_get_raw_file",
        "Download a file's raw bytes at a branch, tag or commit",
    ),
    (
        "gitea_repo_change_files",
        "Create, update, rename or delete several files in one commit",
    ),
    (
        "gitea_repo_update_file",
        "Write a file's new content as a commit (create it when it does not exist)",
    ),
    (
        "gitea_get_tree",
        "List every file and folder of a repository at a commit, recursively",
    ),
    (
        "gitea_repo_get_languages",
        "Which programming languages a repository is written in, by bytes of code",
    ),
    (
        "gitea_repo_get_archive",
        "Download a repository as a zip or tar.gz archive at a branch, tag or commit",
    ),
    // Commits, branches, tags.
    (
        "gitea_repo_compare_diff",
        "Compare two branches, tags or commits: the commits and files between them",
    ),
    (
        "gitea_repo_get_all_commits",
        "The commit history of a repository, a branch or a file, newest first",
    ),
    (
        "gitea_repo_get_single_commit",
        "One commit: its message, author, date, parents and changed files",
    ),
    (
        "gitea_repo_download_commit_diff_or_patch",
        "The diff or patch of one commit, as text",
    ),
    (
        "gitea_repo_get_combined_status_by_ref",
        "Whether the checks (CI statuses) of a branch, tag or commit pass: their combined state",
    ),
    (
        "gitea_repo_create_status",
        "Report a CI check's result (pending, success, failure) on a commit",
    ),
    (
        "gitea_repo_update_branch",
        "Move a branch to point at another commit (reset it)",
    ),
    (
        "gitea_repo_create_branch",
        "Create a branch from another branch, a tag or a commit",
    ),
    (
        "gitea_repo_create_branch_protection",
        "Protect a branch: require reviews or checks, block force pushes and who may push or merge",
    ),
    (
        "gitea_repo_create_tag_protection",
        "Protect tags matching a name pattern, so that only allowed people can create or delete them",
    ),
    (
        "gitea_repo_create_tag",
        "Tag a commit or branch (create a git tag)",
    ),
    (
        "gitea_repo_get_latest_release",
        "The newest published release of a repository",
    ),
    (
        "gitea_repo_create_release",
        "Publish a release from a tag, with notes; a draft or a pre-release",
    ),
    (
        "gitea_repo_create_release_attachment",
        "Upload a file (binary, asset) to a release",
    ),
    // Repositories.
    (
        "gitea_repo_get",
        "One repository's details: description, default branch, size, visibility, archived, fork, stars, open issues",
    ),
    (
        "gitea_repo_edit",
        "Change a repository's settings: name, description, visibility (private or public), default branch, archive it, turn features on or off",
    ),
    (
        "gitea_repo_migrate",
        "Import or mirror a repository from another forge or git server",
    ),
    (
        "gitea_repo_transfer",
        "Give a repository to another owner (user or organization)",
    ),
    (
        "gitea_create_fork",
        "Fork a repository into my account or an organization",
    ),
    (
        "gitea_generate_repo",
        "Create a new repository from a template repository",
    ),
    (
        "gitea_repo_add_collaborator",
        "Give a user access to a repository as a collaborator, with read, write or admin permission",
    ),
    (
        "gitea_repo_get_repo_permissions",
        "What access (read, write, admin) a user has to a repository",
    ),
    (
        "gitea_repo_merge_upstream",
        "Sync a fork's branch with its upstream (parent) repository",
    ),
    (
        "gitea_repo_mirror_sync",
        "Pull the latest changes into a mirror repository now",
    ),
    ("gitea_repo_list_stargazers", "Who starred a repository"),
    ("gitea_repo_list_subscribers", "Who watches a repository"),
    (
        "gitea_repo_update_topics",
        "Set a repository's topics (tags for discovery), replacing the others",
    ),
    // CI: actions.
    (
        "gitea_actions_dispatch_workflow",
        "Start (trigger, run) a workflow manually on a branch or tag, with inputs",
    ),
    (
        "gitea_download_actions_run_job_logs",
        "The log output of a CI job, to see why it failed",
    ),
    (
        "gitea_rerun_failed_workflow_run",
        "Run again only the failed jobs of a workflow run",
    ),
    (
        "gitea_repo_create_runner_registration_token",
        "Register a new actions runner for a repository: get its registration token",
    ),
    (
        "gitea_org_create_runner_registration_token",
        "Register a new actions runner for an organization: get its registration token",
    ),
    (
        "gitea_admin_create_runner_registration_token",
        "Register a new actions runner for the whole instance: get its registration token",
    ),
    (
        "gitea_user_create_runner_registration_token",
        "Register a new actions runner for my account: get its registration token",
    ),
    (
        "gitea_update_repo_secret",
        "Set a repository's actions secret (create or change its value)",
    ),
    (
        "gitea_get_workflow_runs",
        "A repository's CI runs (workflow runs), newest first, by status, branch or event",
    ),
    // Users, organizations, access.
    (
        "gitea_admin_edit_user",
        "Change any user as site admin: make or unmake an administrator, deactivate, prohibit login, restricted, password, email",
    ),
    (
        "gitea_admin_create_user",
        "Create a user account as site admin",
    ),
    (
        "gitea_admin_delete_user",
        "Delete a user account as site admin, optionally purging what they own",
    ),
    (
        "gitea_user_get",
        "One user's profile: full name, email, location, website, when they joined, followers",
    ),
    (
        "gitea_user_get_current",
        "Who I am: the signed-in user's profile",
    ),
    (
        "gitea_org_add_team_member",
        "Add a person to a team of an organization",
    ),
    (
        "gitea_org_list_members",
        "The people who belong to an organization",
    ),
    (
        "gitea_org_delete_member",
        "Remove a person from an organization",
    ),
    (
        "gitea_user_create_token",
        "Create a personal access token with scopes",
    ),
    (
        "gitea_user_current_post_key",
        "Add an SSH public key to my account",
    ),
    (
        "gitea_repo_create_key",
        "Add a deploy key (SSH) to a repository, read only or with write access",
    ),
    // Site administration.
    (
        "gitea_admin_unadopted_list",
        "Repositories present in the server's storage on disk that Gitea's database does not know (unadopted), which an administrator can adopt or delete",
    ),
    (
        "gitea_admin_adopt_repository",
        "Make a repository found on the server's disk but unknown to Gitea a Gitea repository again (adopt it)",
    ),
    (
        "gitea_admin_rename_user",
        "Change a user's username (rename the account), as a site administrator",
    ),
    (
        "gitea_admin_cron_list",
        "The server's scheduled maintenance tasks (cron jobs), with when each last ran and runs next",
    ),
    (
        "gitea_admin_cron_run",
        "Run one of the server's scheduled maintenance tasks (a cron job) now",
    ),
    (
        "gitea_admin_search_emails",
        "Find the user accounts an email address belongs to, across the whole site",
    ),
    // People.
    (
        "gitea_user_get_heatmap_data",
        "A user's contributions per day (the activity heatmap, or contribution calendar, of their profile)",
    ),
    (
        "gitea_org_list_user_orgs",
        "The organizations a user belongs to (is a member of)",
    ),
    (
        "gitea_repo_get_wiki_page_revisions",
        "The edit history of a wiki page: each revision with who changed it and when",
    ),
    // Hooks, notifications, misc.
    (
        "gitea_repo_create_hook",
        "Add a webhook to a repository that calls a URL on pushes, issues, pull requests and other events",
    ),
    (
        "gitea_repo_test_hook",
        "Send a test delivery of a repository's webhook",
    ),
    (
        "gitea_notify_read_list",
        "Mark my notifications as read (all, or up to a time)",
    ),
    (
        "gitea_notify_new_available",
        "How many unread notifications I have",
    ),
    (
        "gitea_get_version",
        "Which version of Gitea the server runs",
    ),
    (
        "gitea_render_markdown",
        "Turn markdown into HTML, as Gitea displays it",
    ),
];

/// What `tool_name` is for, in a person's words, when Gitea's summary does
/// not say it.
pub fn purpose(tool_name: &str) -> Option<&'static str> {
    PURPOSES
        .iter()
        .find(|(name, _)| *name == tool_name)
        .map(|(_, purpose)| *purpose)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn every_purpose_names_an_operation_of_the_catalog_once() {
        let catalog = Catalog::bundled();
        let mut names: Vec<&str> = PURPOSES.iter().map(|(name, _)| *name).collect();
        for name in &names {
            assert!(catalog.get(name).is_some(), "{name} is not an operation");
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PURPOSES.len(), "an operation has two purposes");
    }
}
