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

/// Toolset of operations that declare no tag.
pub const UNTAGGED: &str = "untagged";

/// Area of a route with no literal segment after its scope.
pub const CORE_AREA: &str = "core";

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

/// Every toolset of an operation: for each tag, the tag then `tag.area`.
/// The first entry is the operation's primary toolset.
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
        for name in [tag, fine] {
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
            ["repository", "repository.repos", "user", "user.repos"]
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
