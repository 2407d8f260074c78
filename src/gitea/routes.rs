//! Which catalog operation a concrete API path is, the way Gitea's router
//! would pick it: the raw tool's path is matched against every route
//! template of its method, so that its call falls under the rules of the
//! operation it reaches (a name denied by the policy or `DISABLED_TOOLS`,
//! `CONFIRM_TOOLS`: the security review of issue 45, F4) and its audit
//! entry and spans name a template, never a value from the path (F8).
//!
//! Gitea's router (chi) prefers a literal segment to a parameter at the
//! same place, and serves the parameters of [`is_wildcard_param`] as `*`,
//! one or more segments. Literals compare without regard to case, so a
//! spelling Gitea would refuse still finds the stricter rule.

use std::collections::{HashMap, HashSet};

use http::Method;

use super::encoding::is_wildcard_param;
use crate::catalog::{Catalog, Operation};

/// One segment of a route template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    /// `{name}`: exactly one segment.
    Param,
    /// `{name}` that Gitea serves as `*`: one segment or more.
    Wildcard,
}

impl Segment {
    /// How strongly the segment binds, for the choice between templates
    /// that both match: a literal before a parameter before a wildcard.
    fn rank(&self) -> u8 {
        match self {
            Self::Literal(_) => 2,
            Self::Param => 1,
            Self::Wildcard => 0,
        }
    }
}

/// One operation's route template, split.
#[derive(Debug)]
struct Template {
    segments: Vec<Segment>,
    /// The operation's index in the catalog.
    operation: usize,
}

/// Every route template of a catalog, by method.
#[derive(Debug, Default)]
pub struct RouteIndex {
    by_method: HashMap<Method, Vec<Template>>,
    /// The first segments of the templates (`repos`, `user`, `admin`…).
    areas: HashSet<String>,
}

impl RouteIndex {
    pub fn new(catalog: &Catalog) -> Self {
        let mut by_method: HashMap<Method, Vec<Template>> = HashMap::new();
        let mut areas = HashSet::new();
        for (operation, op) in catalog.operations().iter().enumerate() {
            let segments = split_template(&op.route);
            if let Some(Segment::Literal(area)) = segments.first() {
                areas.insert(area.clone());
            }
            by_method
                .entry(op.method.clone())
                .or_default()
                .push(Template {
                    segments,
                    operation,
                });
        }
        Self { by_method, areas }
    }

    /// Whether `segment` (lowercased) begins some route: an API area, not
    /// a value.
    pub fn is_area(&self, segment: &str) -> bool {
        self.areas.contains(segment)
    }

    /// The operation of `catalog` that `method` on `path` (below
    /// `/api/v1`, no query) reaches, if any. `HEAD` is the `GET` route's
    /// when the catalog has no `HEAD` of its own.
    pub fn operation_at<'c>(
        &self,
        catalog: &'c Catalog,
        method: &Method,
        path: &str,
    ) -> Option<&'c Operation> {
        let sent: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let best = |templates: &Vec<Template>| {
            templates
                .iter()
                .filter(|t| matches(&t.segments, &sent))
                .max_by(|a, b| ranks(&a.segments).cmp(&ranks(&b.segments)))
                .map(|t| t.operation)
        };
        let found = self.by_method.get(method).and_then(best).or_else(|| {
            (method == Method::HEAD)
                .then(|| self.by_method.get(&Method::GET).and_then(best))
                .flatten()
        });
        found.map(|i| &catalog.operations()[i])
    }
}

fn split_template(route: &str) -> Vec<Segment> {
    route
        .trim_start_matches('/')
        .split('/')
        .map(
            |part| match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(name) if is_wildcard_param(route, name) => Segment::Wildcard,
                Some(_) => Segment::Param,
                None => Segment::Literal(part.to_ascii_lowercase()),
            },
        )
        .collect()
}

fn ranks(segments: &[Segment]) -> Vec<u8> {
    segments.iter().map(Segment::rank).collect()
}

/// Whether `sent` fits `template`; a wildcard takes as few segments as
/// leave the rest a match (`commits/{ref}/status` with a `ref` of several).
fn matches(template: &[Segment], sent: &[&str]) -> bool {
    match (template.split_first(), sent.split_first()) {
        (None, None) => true,
        (None, Some(_)) | (Some(_), None) => false,
        (Some((segment, rest)), Some((first, others))) => match segment {
            Segment::Literal(literal) => {
                first.eq_ignore_ascii_case(literal) && matches(rest, others)
            }
            Segment::Param => !first.is_empty() && matches(rest, others),
            Segment::Wildcard => {
                !first.is_empty() && (1..=sent.len()).any(|taken| matches(rest, &sent[taken..]))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(method: Method, path: &str) -> Option<String> {
        let catalog = Catalog::bundled();
        let index = RouteIndex::new(&catalog);
        index
            .operation_at(&catalog, &method, path)
            .map(|op| op.tool_name.clone())
    }

    #[test]
    fn a_path_is_the_operation_of_its_template() {
        assert_eq!(
            at(Method::GET, "/repos/alice/demo/issues/3").as_deref(),
            Some("gitea_issue_get_issue")
        );
        assert_eq!(
            at(Method::DELETE, "/repos/alice/demo").as_deref(),
            Some("gitea_repo_delete")
        );
    }

    #[test]
    fn a_literal_segment_wins_over_a_parameter() {
        // `/repos/{owner}/{repo}/issues/comments` and `…/issues/{index}`.
        assert_eq!(
            at(Method::GET, "/repos/alice/demo/issues/comments").as_deref(),
            Some("gitea_issue_get_repo_comments")
        );
    }

    #[test]
    fn a_wildcard_parameter_spans_several_segments() {
        assert_eq!(
            at(Method::GET, "/repos/alice/demo/contents/docs/guide/a.md").as_deref(),
            Some("gitea_repo_get_contents")
        );
        assert_eq!(
            at(Method::GET, "/repos/alice/demo/commits/feature/x/status").as_deref(),
            Some("gitea_repo_get_combined_status_by_ref")
        );
    }

    #[test]
    fn literals_compare_without_case_and_head_is_get() {
        assert_eq!(
            at(Method::POST, "/Repos/alice/demo/KEYS").as_deref(),
            Some("gitea_repo_create_key")
        );
        assert_eq!(
            at(Method::HEAD, "/repos/alice/demo/issues/3").as_deref(),
            Some("gitea_issue_get_issue")
        );
    }

    #[test]
    fn areas_are_the_first_segments_of_routes() {
        let index = RouteIndex::new(&Catalog::bundled());
        assert!(index.is_area("repos") && index.is_area("admin"));
        assert!(!index.is_area("alice"));
    }

    #[test]
    fn a_path_no_template_fits_is_no_operation() {
        assert_eq!(at(Method::GET, "/repos/alice/demo/no-such-area/1"), None);
        assert_eq!(at(Method::GET, "/repos/alice//issues"), None);
        assert_eq!(at(Method::PATCH, "/version"), None);
    }
}
