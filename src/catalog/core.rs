//! The core: the typed tools `/mcp` lists by default (`TOOL_MODE=core`).
//! This list is the one place that says which operations are everyday work;
//! every other exposed operation stays reachable through the discovery
//! tools. `docs/tools.md` carries the same list with the same reasons.
//!
//! How the list was chosen: what an assistant does in a day of work on a
//! Gitea instance, following the work from finding a repository to shipping
//! a release. A read the work starts from, and the write that finishes it,
//! are in; administration, settings, CI, packages and anything rarely done
//! are left to the discovery tools. Together with the three discovery tools
//! and the raw tool, the core stays within 40 tools and 40,000 bytes of
//! `tools/list` (tested), so a client with a 40-tool cap takes all of it.

/// One core tool: why it is in the core, and what a model reads of it.
/// The texts are written for a model (`docs/tools.md`, "Descriptions"):
/// short, what the tool is for, and what the names and types do not say.
/// `notes` are the only property descriptions the tool's schema keeps
/// (`body.x` names a field of the request body); every other property is
/// named well enough by itself.
#[derive(Debug, Clone, Copy)]
pub struct CoreTool {
    pub name: &'static str,
    pub why: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub notes: &'static [(&'static str, &'static str)],
}

/// The core tools, in the order of the work they serve.
pub const CORE_TOOLS: &[CoreTool] = &[
    // Who am I, and where do I work.
    CoreTool {
        name: "gitea_user_get_current",
        why: "who the assistant acts as; the first call of most sessions",
        title: "Who am I",
        description: "The Gitea user this connection acts as.",
        notes: &[],
    },
    CoreTool {
        name: "gitea_org_list_current_user_orgs",
        why: "the organisations the user works in",
        title: "My organizations",
        description: "The organizations the user belongs to.",
        notes: &[],
    },
    CoreTool {
        name: "gitea_notify_get_list",
        why: "what needs the user's attention (mentions, review requests)",
        title: "My notifications",
        description: "The user's notification threads (mentions, review requests, updates); unread and pinned ones unless told otherwise.",
        notes: &[
            ("all", "include read ones"),
            ("status-types", "unread, read, pinned"),
        ],
    },
    // Repositories.
    CoreTool {
        name: "gitea_repo_search",
        why: "finding a repository by name or topic",
        title: "Search repositories",
        description: "Find repositories by name, topic or description.",
        notes: &[
            ("topic", "match q against topics only"),
            ("includeDesc", "match q in descriptions too"),
            ("uid", "user id: repos they own or contribute to"),
            ("priority_owner_id", "owner id to rank first"),
            ("starredBy", "user id: repos they starred"),
            ("private", "include private repos (default true)"),
            ("is_private", "only private (true) or public (false)"),
            ("template", "include templates (default true)"),
            ("archived", "only archived (true) or not (false)"),
            ("mode", "fork, source, mirror or collaborative"),
            ("exclusive", "with uid: only repos the user owns"),
            (
                "sort",
                "alpha (default), created, updated, size, git_size, lfs_size, stars, forks, id",
            ),
            ("order", "asc (default) or desc"),
        ],
    },
    CoreTool {
        name: "gitea_repo_get",
        why: "a repository's settings, default branch and counts",
        title: "Get a repository",
        description: "One repository: default branch, description, counts and your permissions.",
        notes: &[],
    },
    // File contents.
    CoreTool {
        name: "gitea_repo_get_contents",
        why: "a file (with the sha an update needs) or a directory listing",
        title: "Read a file or directory",
        description: "A file's content as text (base64 only when binary) with its sha, or a directory's entries.",
        notes: &[("ref", "branch, tag or commit (default branch if absent)")],
    },
    // Gitea's PUT creates the file when no sha is given: one tool writes
    // both (`gitea_repo_create_file` is a search away).
    CoreTool {
        name: "gitea_repo_update_file",
        why: "creating or changing a file in one commit",
        title: "Create or update a file",
        description: "Create a file, or change or move one (give the sha gitea_repo_get_contents returned), in one commit.",
        notes: &[
            ("body.content", "base64"),
            ("body.sha", "the file's current sha; none creates it"),
            ("body.from_path", "old path, to move the file"),
            ("body.branch", "base branch (default branch if absent)"),
            ("body.new_branch", "commit to this new branch instead"),
        ],
    },
    // Branches and commits (one commit's detail is a search away).
    CoreTool {
        name: "gitea_repo_list_branches",
        why: "the branches to read from or open a pull request against",
        title: "List branches",
        description: "A repository's branches with their last commit.",
        notes: &[("q", "name contains")],
    },
    CoreTool {
        name: "gitea_repo_create_branch",
        why: "a branch for a change",
        title: "Create a branch",
        description: "A new branch from a branch, tag or commit.",
        notes: &[
            (
                "body.old_ref_name",
                "start point (default branch if absent)",
            ),
            ("body.old_branch_name", "deprecated: old_ref_name"),
        ],
    },
    CoreTool {
        name: "gitea_repo_get_all_commits",
        why: "history of a branch or a path",
        title: "List commits",
        description: "Commits of a branch or path, newest first.",
        notes: &[
            ("sha", "branch or commit to start from"),
            ("path", "only commits touching it"),
            ("not", "leave out commits of this ref"),
        ],
    },
    // Issues and comments.
    CoreTool {
        name: "gitea_issue_list_issues",
        why: "a repository's issues, by state, label or milestone",
        title: "List issues",
        description: "A repository's issues, and its pull requests unless type is issues.",
        notes: &[
            ("labels", "label names, comma-separated"),
            ("milestones", "milestone names or ids, comma-separated"),
        ],
    },
    CoreTool {
        name: "gitea_issue_get_issue",
        why: "one issue with its body and labels",
        title: "Get an issue",
        description: "One issue with its body, labels and assignees.",
        notes: &[("index", "issue number")],
    },
    CoreTool {
        name: "gitea_issue_create_issue",
        why: "filing an issue",
        title: "Create an issue",
        description: "File an issue.",
        notes: &[
            ("body.labels", "label ids"),
            ("body.milestone", "milestone id"),
            ("body.assignee", "deprecated: assignees"),
        ],
    },
    CoreTool {
        name: "gitea_issue_edit_issue",
        why: "editing, assigning or closing an issue",
        title: "Edit an issue",
        description: "Change an issue's title, body, state, assignees, milestone or due date; fields left out stay.",
        notes: &[
            ("index", "issue number"),
            ("body.state", "open or closed"),
            ("body.milestone", "milestone id"),
            (
                "body.content_version",
                "the body version edited; another fails with 409",
            ),
            ("body.assignee", "deprecated: assignees"),
        ],
    },
    CoreTool {
        name: "gitea_issue_get_comments",
        why: "the discussion of an issue or pull request",
        title: "List comments",
        description: "The comments of an issue or pull request.",
        notes: &[("index", "issue or PR number")],
    },
    CoreTool {
        name: "gitea_issue_create_comment",
        why: "answering on an issue or pull request",
        title: "Comment",
        description: "Add a comment to an issue or pull request.",
        notes: &[("index", "issue or PR number")],
    },
    // Labels and milestones.
    CoreTool {
        name: "gitea_issue_list_labels",
        why: "the label ids that issue writes take",
        title: "List labels",
        description: "A repository's labels, with the ids issue writes take.",
        notes: &[],
    },
    CoreTool {
        name: "gitea_issue_add_label",
        why: "labelling an issue or pull request",
        title: "Add labels",
        description: "Add labels to an issue or pull request.",
        notes: &[
            ("index", "issue or PR number"),
            ("body.labels", "label ids or names"),
        ],
    },
    CoreTool {
        name: "gitea_issue_get_milestones_list",
        why: "the milestone ids that issue writes take",
        title: "List milestones",
        description: "A repository's milestones, with the ids issue writes take.",
        notes: &[("state", "open (default), closed or all")],
    },
    // Pull requests.
    CoreTool {
        name: "gitea_repo_list_pull_requests",
        why: "a repository's pull requests",
        title: "List pull requests",
        description: "List a repository's pull requests.",
        notes: &[
            ("base_branch", "target branch"),
            ("milestone", "milestone id"),
            ("labels", "label ids"),
            ("poster", "author login"),
        ],
    },
    CoreTool {
        name: "gitea_repo_get_pull_request",
        why: "one pull request with its head, base and mergeability",
        title: "Get a pull request",
        description: "One pull request: head, base, state and whether it can merge.",
        notes: &[("index", "PR number")],
    },
    CoreTool {
        name: "gitea_repo_get_pull_request_files",
        why: "what a pull request changes, for a review",
        title: "Pull request files",
        description: "The files a pull request changes, with line counts.",
        notes: &[("index", "PR number")],
    },
    CoreTool {
        name: "gitea_repo_create_pull_request",
        why: "proposing a change",
        title: "Open a pull request",
        description: "Propose merging head into base.",
        notes: &[
            ("body.head", "source branch, or owner:branch of a fork"),
            ("body.base", "target branch"),
            ("body.labels", "label ids"),
            ("body.milestone", "milestone id"),
            ("body.assignee", "deprecated: assignees"),
        ],
    },
    CoreTool {
        name: "gitea_repo_create_pull_review",
        why: "reviewing: approve, request changes or comment",
        title: "Review a pull request",
        description: "Approve, request changes or comment, with line comments if wanted.",
        notes: &[
            ("index", "PR number"),
            ("body.commit_id", "commit reviewed (default: head)"),
        ],
    },
    CoreTool {
        name: "gitea_repo_merge_pull_request",
        why: "landing a reviewed change",
        title: "Merge a pull request",
        description: "Merge a pull request in the style given by Do.",
        notes: &[
            ("index", "PR number"),
            ("body.head_commit_id", "refuse if the head moved past it"),
        ],
    },
    // Releases.
    CoreTool {
        name: "gitea_repo_list_releases",
        why: "what has shipped",
        title: "List releases",
        description: "A repository's releases, newest first.",
        notes: &[],
    },
    CoreTool {
        name: "gitea_repo_create_release",
        why: "shipping: a tag with notes",
        title: "Create a release",
        description: "Publish a release of a tag (created from target_commitish if new), with notes.",
        notes: &[("body.body", "release notes (Markdown)")],
    },
];

/// The core tool named `tool_name`.
pub fn core_tool(tool_name: &str) -> Option<&'static CoreTool> {
    CORE_TOOLS.iter().find(|tool| tool.name == tool_name)
}

/// True when `tool_name` is in the core.
pub fn is_core(tool_name: &str) -> bool {
    core_tool(tool_name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn every_core_tool_is_in_the_bundled_catalog() {
        let catalog = Catalog::bundled();
        for tool in CORE_TOOLS {
            assert!(catalog.get(tool.name).is_some(), "{}", tool.name);
        }
    }

    #[test]
    fn the_docs_table_names_exactly_the_core_tools() {
        let docs = include_str!("../../docs/tools.md");
        let section = docs
            .split("## The core")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .unwrap();
        let documented: Vec<&str> = section
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|line| line.split('`').next())
            .collect();
        let listed: Vec<&str> = CORE_TOOLS.iter().map(|t| t.name).collect();
        assert_eq!(documented, listed);
    }

    #[test]
    fn core_tools_are_listed_once() {
        let mut names: Vec<&str> = CORE_TOOLS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CORE_TOOLS.len());
    }
}
