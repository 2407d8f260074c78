//! The plain-language line the consent page shows for each granular Gitea
//! scope the gateway asks for (`read:user`, `write:repository` …).

/// What `scope` lets the application do, in a sentence fragment; the
/// scope itself when it is not a `read:`/`write:` scope of a category we
/// know.
pub fn describe_gitea_scope(scope: &str) -> String {
    let Some((level, category)) = scope.split_once(':') else {
        return scope.to_owned();
    };
    let what = match category {
        "activitypub" => "your ActivityPub (federation) data",
        "admin" => "the site's administration (users, organisations, settings)",
        "issue" => "issues, pull request comments, labels and milestones",
        "misc" => "miscellaneous settings and tools (Markdown rendering, signing keys)",
        "notification" => "your notifications",
        "organization" => "organisations and teams you belong to",
        "package" => "packages in the package registry",
        "repository" => "repositories: code, branches, pull requests, releases, settings",
        "user" => "your profile, keys, settings and followers",
        _ => return scope.to_owned(),
    };
    match level {
        "read" => format!("read {what}"),
        "write" => format!("read and change {what}"),
        _ => scope.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_and_write_scopes_are_described() {
        assert_eq!(
            describe_gitea_scope("write:repository"),
            "read and change repositories: code, branches, pull requests, releases, settings"
        );
        assert!(describe_gitea_scope("read:user").starts_with("read your profile"));
    }

    #[test]
    fn an_unknown_scope_is_shown_as_it_is() {
        for scope in ["openid", "read:nothing", "all:user"] {
            assert_eq!(describe_gitea_scope(scope), scope);
        }
    }
}
