//! Pagination facts from Gitea's `X-Total-Count` and `Link` headers.

use serde::Serialize;

/// The envelope's `pagination` object: there is a next page. Fields
/// Gitea did not tell are left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pagination {
    pub page: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_count: Option<u64>,
    pub next_page: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_page: Option<u64>,
}

/// One `<url>; rel="..."` entry of a `Link` header, reduced to its page and limit.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LinkTarget {
    rel: String,
    page: Option<u64>,
    limit: Option<u64>,
}

fn parse_link_header(header: &str) -> Vec<LinkTarget> {
    header
        .split(',')
        .filter_map(|entry| {
            let (target, params) = entry.trim().split_once(';')?;
            let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
            let rel = params.split(';').find_map(|p| {
                let (key, value) = p.trim().split_once('=')?;
                (key.trim() == "rel").then(|| value.trim().trim_matches('"').to_owned())
            })?;
            // Gitea writes absolute URLs; a relative one still has a query.
            let url = url::Url::parse(target)
                .or_else(|_| url::Url::parse("http://relative.invalid/")?.join(target))
                .ok()?;
            let query_number = |name: &str| {
                url.query_pairs()
                    .find(|(k, _)| k == name)
                    .and_then(|(_, v)| v.parse().ok())
            };
            Some(LinkTarget {
                rel,
                page: query_number("page"),
                limit: query_number("limit"),
            })
        })
        .collect()
}

/// Builds the pagination object, or `None` when there is nothing more to
/// fetch: no header says so, or this is the last page. `requested` holds
/// the `page` and `limit` that were sent. Without a `Link` header, the
/// next page is worked out from `X-Total-Count` and the limit.
pub fn pagination_from_headers(
    total_count: Option<u64>,
    link: Option<&str>,
    requested_page: Option<u64>,
    requested_limit: Option<u64>,
) -> Option<Pagination> {
    if total_count.is_none() && link.is_none() {
        return None;
    }
    let links = link.map(parse_link_header).unwrap_or_default();
    let find = |rel: &str| links.iter().find(|l| l.rel == rel);
    let limit = requested_limit.or_else(|| links.iter().find_map(|l| l.limit));
    let page = requested_page.unwrap_or(1).max(1);
    let linked_next = find("next").and_then(|l| l.page);
    let last_page = find("last")
        .and_then(|l| l.page)
        .or_else(|| match (total_count, limit) {
            (Some(total), Some(limit)) if limit > 0 => Some(total.div_ceil(limit).max(1)),
            _ if linked_next.is_none() => Some(page),
            _ => None,
        });
    let next_page =
        linked_next.or_else(|| last_page.filter(|&last| page < last).map(|_| page + 1))?;
    Some(Pagination {
        page,
        limit,
        total_count,
        next_page,
        last_page,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST_PAGE: &str = r#"<http://g/api/v1/repos/o/r/issues?limit=30&page=2>; rel="next",<http://g/api/v1/repos/o/r/issues?limit=30&page=4>; rel="last""#;

    #[test]
    fn first_page_reads_next_and_last_from_link() {
        let p = pagination_from_headers(Some(120), Some(FIRST_PAGE), None, None).unwrap();
        assert_eq!(
            p,
            Pagination {
                page: 1,
                limit: Some(30),
                total_count: Some(120),
                next_page: 2,
                last_page: Some(4)
            }
        );
    }

    #[test]
    fn the_last_page_has_nothing_more_to_fetch() {
        let link = r#"<http://g/api/v1/x?limit=30&page=1>; rel="first",<http://g/api/v1/x?limit=30&page=3>; rel="prev""#;
        assert_eq!(
            pagination_from_headers(Some(120), Some(link), Some(4), Some(30)),
            None
        );
    }

    #[test]
    fn total_count_alone_derives_the_next_and_last_page_from_the_limit() {
        let p = pagination_from_headers(Some(45), None, Some(1), Some(20)).unwrap();
        assert_eq!(p.last_page, Some(3));
        assert_eq!(p.next_page, 2);
        assert_eq!(
            pagination_from_headers(Some(45), None, Some(3), Some(20)),
            None
        );
    }

    #[test]
    fn everything_on_one_page_is_no_pagination() {
        assert_eq!(pagination_from_headers(Some(3), None, None, Some(30)), None);
    }

    #[test]
    fn no_headers_means_no_pagination() {
        assert_eq!(pagination_from_headers(None, None, Some(2), None), None);
    }

    #[test]
    fn malformed_link_entries_are_ignored() {
        assert_eq!(
            pagination_from_headers(Some(1), Some("garbage, <nope"), None, None),
            None
        );
    }

    #[test]
    fn relative_link_targets_are_understood() {
        let link = r#"</api/v1/x?page=5&limit=10>; rel="next""#;
        let p = pagination_from_headers(None, Some(link), Some(4), None).unwrap();
        assert_eq!(p.next_page, 5);
        assert_eq!(p.limit, Some(10));
    }
}
