//! Deprecated operations and the current operations they duplicate.
//! Gitea keeps old routes that run today's handlers
//! (`DELETE /repos/{o}/{r}/issues/{index}/comments/{id}` runs what
//! `DELETE /repos/{o}/{r}/issues/comments/{id}` runs): a rule that names
//! the current operation must hold for its deprecated twin too, or the old
//! route walks around it (the red team's F3, issue 53). Each deprecated
//! operation is therefore judged by every rule by name as itself and as its
//! twin ([`super::Operation::rule_names`]).

/// `(deprecated operationId, the operationId of its current twin)`, for
/// every deprecated operation of the bundled document (a test holds it).
pub const DEPRECATED_TWINS: &[(&str, &str)] = &[
    ("createOrgRepoDeprecated", "createOrgRepo"),
    ("issueDeleteCommentDeprecated", "issueDeleteComment"),
    ("issueEditCommentDeprecated", "issueEditComment"),
    // `GET /repos/{o}/{r}/times/{user}`: the repository's times of one
    // user, which `repoTrackedTimes` gives with `user=`.
    ("userTrackedTimes", "repoTrackedTimes"),
];

/// The twin of a deprecated operation, by operationId.
pub fn twin_of(operation_id: &str) -> Option<&'static str> {
    DEPRECATED_TWINS
        .iter()
        .find(|(old, _)| *old == operation_id)
        .map(|(_, twin)| *twin)
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;

    #[test]
    fn every_deprecated_operation_of_the_bundled_document_has_its_twin() {
        let catalog = Catalog::bundled();
        let deprecated: Vec<_> = catalog
            .operations()
            .iter()
            .filter(|op| op.deprecated)
            .collect();
        assert_eq!(deprecated.len(), super::DEPRECATED_TWINS.len());
        for op in deprecated {
            let twin = op.judged_as.as_deref().unwrap_or_else(|| {
                panic!(
                    "{} is deprecated and has no twin in DEPRECATED_TWINS",
                    op.operation_id
                )
            });
            let twin = catalog.get(twin).unwrap();
            assert!(!twin.deprecated);
            assert_eq!(twin.method, op.method, "{}", op.operation_id);
        }
    }

    #[test]
    fn a_current_operation_is_judged_by_its_own_name_alone() {
        let catalog = Catalog::bundled();
        let op = catalog.get("gitea_issue_delete_comment").unwrap();
        assert_eq!(op.rule_names().collect::<Vec<_>>(), [op.tool_name.as_str()]);
        let old = catalog
            .get("gitea_issue_delete_comment_deprecated")
            .unwrap();
        assert_eq!(
            old.rule_names().collect::<Vec<_>>(),
            [old.tool_name.as_str(), "gitea_issue_delete_comment"]
        );
    }
}
