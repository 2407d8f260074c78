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

/// One core tool and why it is in the core.
#[derive(Debug, Clone, Copy)]
pub struct CoreTool {
    pub name: &'static str,
    pub why: &'static str,
}

/// The core tools, in the order of the work they serve.
pub const CORE_TOOLS: &[CoreTool] = &[
    // Who am I, and where do I work.
    CoreTool {
        name: "gitea_user_get_current",
        why: "who the assistant acts as; the first call of most sessions",
    },
    CoreTool {
        name: "gitea_org_list_current_user_orgs",
        why: "the organisations the user works in",
    },
    CoreTool {
        name: "gitea_notify_get_list",
        why: "what needs the user's attention (mentions, review requests)",
    },
    // Repositories.
    CoreTool {
        name: "gitea_repo_search",
        why: "finding a repository by name or topic",
    },
    CoreTool {
        name: "gitea_repo_get",
        why: "a repository's settings, default branch and counts",
    },
    // File contents.
    CoreTool {
        name: "gitea_repo_get_contents",
        why: "a file (with the sha an update needs) or a directory listing",
    },
    CoreTool {
        name: "gitea_repo_create_file",
        why: "adding a file in one commit",
    },
    CoreTool {
        name: "gitea_repo_update_file",
        why: "changing a file in one commit",
    },
    // Branches and commits (one commit's detail is a search away).
    CoreTool {
        name: "gitea_repo_list_branches",
        why: "the branches to read from or open a pull request against",
    },
    CoreTool {
        name: "gitea_repo_create_branch",
        why: "a branch for a change",
    },
    CoreTool {
        name: "gitea_repo_get_all_commits",
        why: "history of a branch or a path",
    },
    // Issues and comments.
    CoreTool {
        name: "gitea_issue_list_issues",
        why: "a repository's issues, by state, label or milestone",
    },
    CoreTool {
        name: "gitea_issue_get_issue",
        why: "one issue with its body and labels",
    },
    CoreTool {
        name: "gitea_issue_create_issue",
        why: "filing an issue",
    },
    CoreTool {
        name: "gitea_issue_edit_issue",
        why: "editing, assigning or closing an issue",
    },
    CoreTool {
        name: "gitea_issue_get_comments",
        why: "the discussion of an issue or pull request",
    },
    CoreTool {
        name: "gitea_issue_create_comment",
        why: "answering on an issue or pull request",
    },
    // Labels and milestones.
    CoreTool {
        name: "gitea_issue_list_labels",
        why: "the label ids that issue writes take",
    },
    CoreTool {
        name: "gitea_issue_add_label",
        why: "labelling an issue or pull request",
    },
    CoreTool {
        name: "gitea_issue_get_milestones_list",
        why: "the milestone ids that issue writes take",
    },
    // Pull requests.
    CoreTool {
        name: "gitea_repo_list_pull_requests",
        why: "a repository's pull requests",
    },
    CoreTool {
        name: "gitea_repo_get_pull_request",
        why: "one pull request with its head, base and mergeability",
    },
    CoreTool {
        name: "gitea_repo_get_pull_request_files",
        why: "what a pull request changes, for a review",
    },
    CoreTool {
        name: "gitea_repo_create_pull_request",
        why: "proposing a change",
    },
    CoreTool {
        name: "gitea_repo_create_pull_review",
        why: "reviewing: approve, request changes or comment",
    },
    CoreTool {
        name: "gitea_repo_merge_pull_request",
        why: "landing a reviewed change",
    },
    // Releases.
    CoreTool {
        name: "gitea_repo_list_releases",
        why: "what has shipped",
    },
    CoreTool {
        name: "gitea_repo_create_release",
        why: "shipping: a tag with notes",
    },
];

/// True when `tool_name` is in the core.
pub fn is_core(tool_name: &str) -> bool {
    CORE_TOOLS.iter().any(|tool| tool.name == tool_name)
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
