//! Toolsets: the groups operators enable with `TOOLSETS`. This module owns how
//! an operation's tags and route become toolset names.
//!
//! # Rule
//!
//! An operation belongs to each of its OpenAPI tags (`repository`, `issue`,
//! ...) and, for each tag, to one finer toolset `tag.area`, where `area` comes
//! from the route:
//!
//! 1. Split the route on `/`; the first segment is the *scope* (`repos`,
//!    `orgs`, `user`, `admin`, ...).
//! 2. `area` is the first *literal* segment after the scope. Segments holding a
//!    template (`{owner}`, `{index}.{diffType}`) are passed over, and so are
//!    segments with no letter or digit (Gitea's `/-/` separator in package
//!    routes).
//! 3. A literal is normalized: the part before its first `.` (a file
//!    extension such as `signing-key.gpg`), lowercased, with every run of
//!    characters outside `[a-z0-9]` turned into `_`.
//! 4. When there is no such segment, `area` is `core`.
//!
//! | route | area |
//! | --- | --- |
//! | `/repos/{owner}/{repo}/pulls/{index}` | `pulls` |
//! | `/repos/{owner}/{repo}` | `core` |
//! | `/repos/search` | `search` |
//! | `/orgs/{org}/teams` | `teams` |
//! | `/users/{username}/repos`, `/user/repos` | `repos` |
//! | `/admin/users/{username}` | `users` |
//! | `/version` | `core` |
//!
//! Tags are normalized the same way as areas (Gitea's are already plain
//! lowercase words); an operation without tags is put in `untagged`.
//!
//! # Tags too big to name
//!
//! Every toolset a user can name must fit a client's tool limit (VS Code
//! refuses more than 128 tools; [`MAX_TOOLSET_OPERATIONS`] leaves room for
//! the discovery tools and the raw tool). A tag with more operations than
//! that is not a toolset: its operations go to groups of areas instead
//! ([`SPLIT_TAGS`]). Gitea 1.27's `repository` tag (205 operations) becomes
//! `repository.code`, `repository.collaboration`, `repository.manage` and
//! `repository.actions`. An area the table does not list (a newer Gitea's
//! live document) goes to the tag's fallback group.

/// The pseudo toolset that names the raw tool (in `TOOLSETS` and URLs).
pub const RAW_TOOLSET: &str = "raw";

/// Toolset of operations that declare no tag.
pub const UNTAGGED: &str = "untagged";

/// Area of a route with no literal segment after its scope.
pub const CORE_AREA: &str = "core";

/// The most operations a nameable toolset may hold: 128 (VS Code's limit)
/// less the three discovery tools and the raw tool listed beside it.
pub const MAX_TOOLSET_OPERATIONS: usize = 124;

/// A tag split into groups of areas, because it is too big to be a toolset.
#[derive(Debug)]
pub struct SplitTag {
    pub tag: &'static str,
    /// Group name and the areas in it.
    pub groups: &'static [(&'static str, &'static [&'static str])],
    /// The group of an area no entry lists.
    pub fallback: &'static str,
}

/// The tags split into groups. Groups follow the work they serve: reading
/// and writing code; reviewing and releasing it; running the repository;
/// CI. Each fits [`MAX_TOOLSET_OPERATIONS`] (tested on the bundled catalog).
pub const SPLIT_TAGS: &[SplitTag] = &[SplitTag {
    tag: "repository",
    groups: &[
        (
            "repository.code",
            &[
                "archive",
                "branches",
                "commits",
                "compare",
                "contents",
                "contents_ext",
                "diffpatch",
                "editorconfig",
                "file_contents",
                "git",
                "languages",
                "licenses",
                "media",
                "raw",
                "signing_key",
                "statuses",
                "tags",
            ],
        ),
        (
            "repository.collaboration",
            &[
                "activities",
                "assignees",
                "issue_config",
                "issue_templates",
                "issues",
                "new_pin_allowed",
                "pulls",
                "releases",
                "reviewers",
                "stargazers",
                "subscribers",
                "subscription",
                "times",
                "wiki",
            ],
        ),
        (
            "repository.manage",
            &[
                "avatar",
                "branch_protections",
                "collaborators",
                "core",
                "forks",
                "generate",
                "hooks",
                "keys",
                "merge_upstream",
                "migrate",
                "mirror_sync",
                "push_mirrors",
                "push_mirrors_sync",
                "reparent",
                "repos",
                "search",
                "tag_protections",
                "teams",
                "topics",
                "transfer",
            ],
        ),
        ("repository.actions", &["actions"]),
    ],
    fallback: "repository.manage",
}];

/// The split entry of `tag`, if it is too big to be a toolset.
pub fn split_tag(tag: &str) -> Option<&'static SplitTag> {
    SPLIT_TAGS.iter().find(|split| split.tag == tag)
}

impl SplitTag {
    /// The group an area of this tag belongs to.
    pub fn group_of(&self, area: &str) -> &'static str {
        self.groups
            .iter()
            .find(|(_, areas)| areas.contains(&area))
            .map_or(self.fallback, |(group, _)| group)
    }

    /// The group names, for messages.
    pub fn group_names(&self) -> Vec<&'static str> {
        self.groups.iter().map(|(group, _)| *group).collect()
    }
}

/// What to say about a toolset name the catalog lacks: a split tag names
/// its groups, anything else nothing.
pub fn unknown_toolset_hint(name: &str) -> String {
    match split_tag(name) {
        Some(split) => format!(
            "; `{name}` is too big for one toolset and is split into {}",
            split.group_names().join(", ")
        ),
        None => String::new(),
    }
}

/// The area of a route, per the module rule.
pub fn route_area(route: &str) -> String {
    route
        .split('/')
        .filter(|segment| !segment.is_empty())
        .skip(1)
        .filter(|segment| !segment.contains('{'))
        .map(normalize_literal)
        .find(|area| !area.is_empty())
        .unwrap_or_else(|| CORE_AREA.to_string())
}

/// Every toolset of an operation: for each tag, the tag (or, for a split
/// tag, the area's group) then `tag.area`. The first entry is the
/// operation's primary toolset.
pub fn toolsets_for(tags: &[String], route: &str) -> Vec<String> {
    let area = route_area(route);
    let mut toolsets: Vec<String> = Vec::with_capacity(tags.len().max(1) * 2);
    let mut tags: Vec<String> = tags
        .iter()
        .map(|tag| normalize(tag))
        .filter(|tag| !tag.is_empty())
        .collect();
    if tags.is_empty() {
        tags.push(UNTAGGED.to_string());
    }
    for tag in tags {
        let fine = format!("{tag}.{area}");
        let coarse = match split_tag(&tag) {
            Some(split) => split.group_of(&area).to_owned(),
            None => tag,
        };
        for name in [coarse, fine] {
            if !toolsets.contains(&name) {
                toolsets.push(name);
            }
        }
    }
    toolsets
}

fn normalize_literal(segment: &str) -> String {
    normalize(segment.split('.').next().unwrap_or_default())
}

/// Lowercase, runs outside `[a-z0-9]` → `_`, no leading/trailing `_`.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn area_is_the_first_literal_after_the_scope() {
        let table = [
            ("/repos/{owner}/{repo}/pulls/{index}", "pulls"),
            ("/repos/{owner}/{repo}/pulls/{index}.{diffType}", "pulls"),
            ("/repos/{owner}/{repo}", "core"),
            ("/repos/search", "search"),
            ("/repos/issues/search", "issues"),
            ("/orgs/{org}/teams", "teams"),
            ("/orgs/{org}", "core"),
            ("/users/{username}/repos", "repos"),
            ("/user/repos", "repos"),
            ("/user", "core"),
            ("/admin/users/{username}", "users"),
            ("/version", "core"),
            ("/repos/{owner}/{repo}/signing-key.gpg", "signing_key"),
            (
                "/repos/{owner}/{repo}/branch_protections/{name}",
                "branch_protections",
            ),
            (
                "/repos/{owner}/{repo}/contents-ext/{filepath}",
                "contents_ext",
            ),
            ("/packages/{owner}/{type}/{name}/-/latest", "latest"),
            ("/packages/{owner}/{type}/{name}", "core"),
            ("/teams/{id}/members/{username}", "members"),
        ];
        for (route, area) in table {
            assert_eq!(route_area(route), area, "{route}");
        }
    }

    #[test]
    fn toolsets_are_each_tag_then_its_area() {
        let tags = ["repository".to_string(), "user".to_string()];
        assert_eq!(
            toolsets_for(&tags, "/user/repos"),
            [
                "repository.manage",
                "repository.repos",
                "user",
                "user.repos"
            ]
        );
    }

    #[test]
    fn a_split_tag_gives_its_area_group_instead_of_the_tag() {
        let tags = ["repository".to_string()];
        assert_eq!(
            toolsets_for(&tags, "/repos/{owner}/{repo}/pulls/{index}"),
            ["repository.collaboration", "repository.pulls"]
        );
        assert_eq!(
            toolsets_for(&tags, "/repos/{owner}/{repo}/actions/runs"),
            ["repository.actions"]
        );
        assert_eq!(
            toolsets_for(&tags, "/repos/{owner}/{repo}/brand_new_area"),
            ["repository.manage", "repository.brand_new_area"]
        );
    }

    #[test]
    fn operations_without_tags_are_untagged() {
        assert_eq!(toolsets_for(&[], "/version"), ["untagged", "untagged.core"]);
    }

    #[test]
    fn tags_are_normalized() {
        let tags = ["Git Data".to_string(), "git data".to_string()];
        assert_eq!(toolsets_for(&tags, "/x/y"), ["git_data", "git_data.y"]);
    }
}
