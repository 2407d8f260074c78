//! The tables of the compact view: which definitions are written as
//! their naming field, which of their fields are configuration or
//! statistics (left out everywhere), which only matter when one item is
//! read (left out of lists), and which hold content that the URL rule must
//! not touch. Written by hand for what a model asks of each resource
//! (`docs/tools.md`, "Views"); the full view has everything.

/// Definitions whose nested objects are written as one field: the field
/// that names the object to a person and to the API.
pub const NAMING_FIELDS: &[(&str, &str)] = &[
    ("User", "login"),
    ("Organization", "name"),
    ("Team", "name"),
    ("Repository", "full_name"),
    ("RepositoryMeta", "full_name"),
    ("Label", "name"),
    ("Milestone", "title"),
    ("CommitMeta", "sha"),
    ("Attachment", "name"),
    ("PayloadUser", "name"),
    ("PayloadCommitVerification", "verified"),
];

/// Fields of a definition that are its configuration or statistics rather
/// than what it is, left out of the compact view; `prefix*` names every
/// field that starts so. The full view has them.
pub const DETAIL_FIELDS: &[(&str, &[&str])] = &[
    (
        "Repository",
        &[
            "allow_*",
            "has_*",
            "default_allow_maintainer_edit",
            "default_delete_branch_after_merge",
            "default_merge_style",
            "default_target_branch",
            "default_update_style",
            "autodetect_manual_merge",
            "ignore_whitespace_conflicts",
            "internal_tracker",
            "external_tracker",
            "external_wiki",
            "projects_mode",
            "object_format_name",
            "mirror_interval",
            "mirror_updated",
            "mirror_last_sync_at",
            "link",
            "size",
            "watchers_count",
            "branch_count",
            "release_counter",
        ],
    ),
    (
        "User",
        &[
            "login_name",
            "source_id",
            "language",
            "last_login",
            "prohibit_login",
            "restricted",
            "active",
            "followers_count",
            "following_count",
            "starred_repos_count",
            // A person is their login and name; how to mail them, when the
            // account was made and who may see it are rarely the question
            // (issue 44).
            "email",
            "created",
            "visibility",
        ],
    ),
    (
        "Organization",
        &["repo_admin_change_team_access", "username"],
    ),
    // A commit's author is a name and a date; `created` repeats the date.
    // Gitea 1.27 puts the commit's own sha in `commit.tree`: misleading.
    ("CommitUser", &["email"]),
    ("Commit", &["created"]),
    ("RepoCommit", &["tree"]),
    ("Hook", &["created_at"]),
    (
        "ActionWorkflowRun",
        &["trigger_actor", "head_repository", "repository_id"],
    ),
    ("ActionWorkflowJob", &["runner_id"]),
    ("PayloadCommit", &["verification"]),
];

/// Fields that matter when one item is read, and are left out of a list
/// of them (issue 44: a commit list paid for each commit's files, stats
/// and tree many times what its sha, first line, author and date take).
/// Reading the item alone (or `view: "full"`) gives them.
pub const LIST_DETAIL_FIELDS: &[(&str, &[&str])] = &[
    // The committer usually repeats the author; the tree, parents, files
    // and stats are one commit's detail.
    ("Commit", &["committer", "parents", "files", "stats"]),
    ("RepoCommit", &["committer", "verification"]),
    // A directory entry is its name, path, type and size; the sha an
    // update needs is in the file's own read.
    (
        "ContentsResponse",
        &[
            "sha",
            "last_commit_sha",
            "last_commit_message",
            "last_committer_date",
            "last_author_date",
            "encoding",
            "lfs_oid",
        ],
    ),
    // A team's access is in `units_map` (Gitea 1.27 reports `permission:
    // "none"` below admin); the `units` list repeats its keys.
    ("Team", &["units"]),
    // A key in a list is its title and fingerprint, not the key itself.
    ("PublicKey", &["key"]),
    ("DeployKey", &["key"]),
    ("GPGKey", &["public_key", "subkeys"]),
    ("CommitStatus", &["updated_at"]),
    ("ActionWorkflowJob", &["steps", "labels"]),
    // A branch's last commit: its id, message, author and time.
    (
        "PayloadCommit",
        &["added", "modified", "removed", "committer"],
    ),
    (
        "Branch",
        &[
            "effective_branch_protection_name",
            "enable_status_check",
            "status_check_contexts",
            "required_approvals",
            "user_can_merge",
            "user_can_push",
        ],
    ),
];

/// Fields whose content is the resource's, written as Gitea sent it: a
/// webhook's `config.url` is where it posts, not an API URL.
pub const VERBATIM_FIELDS: &[(&str, &str)] = &[("Hook", "config")];

/// True when `field` of `definition` is one of its [`DETAIL_FIELDS`].
pub(super) fn is_detail(definition: &str, field: &str) -> bool {
    listed(DETAIL_FIELDS, definition, field)
}

/// True when `field` of `definition` is one of its [`LIST_DETAIL_FIELDS`].
pub(super) fn is_list_detail(definition: &str, field: &str) -> bool {
    listed(LIST_DETAIL_FIELDS, definition, field)
}

/// True when `field` of `definition` is written as Gitea sent it.
pub(super) fn is_verbatim(definition: &str, field: &str) -> bool {
    VERBATIM_FIELDS.contains(&(definition, field))
}

fn listed(table: &[(&str, &[&str])], definition: &str, field: &str) -> bool {
    table
        .iter()
        .filter(|(name, _)| *name == definition)
        .flat_map(|(_, fields)| fields.iter())
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => field.starts_with(prefix),
            None => *pattern == field,
        })
}
