//! Which tools one MCP URL serves, and the URL grammar that names it. A
//! leaf: the HTTP layer parses request paths with it, the MCP dispatcher
//! lists and checks tools by it, and the OAuth server binds tokens to it.
//!
//! | path | surface |
//! | --- | --- |
//! | `/mcp` | the default (`TOOL_MODE`: the core tools plus discovery) |
//! | `/mcp/all` | every exposed operation as its own tool |
//! | `/mcp/x/{toolset[,toolset…]}` | exactly those toolsets, plus discovery |
//! | any of them + `/readonly` | the same, GET/HEAD only |
//!
//! A URL only narrows what the server's settings expose; it never widens
//! them. Toolset names are checked against the catalog's by the caller
//! ([`Surface::parse`] takes the check), so an unknown name is a clear
//! error and never an empty list.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::catalog::toolsets::{RAW_TOOLSET, unknown_toolset_hint};

/// The MCP endpoint's base path.
pub const MCP_PATH: &str = "/mcp";

/// The suffix that makes any surface read-only.
pub const READONLY_SUFFIX: &str = "readonly";

/// The most toolsets one URL may name.
pub const MAX_URL_TOOLSETS: usize = 32;

/// The longest toolset list one URL may carry (bytes, after decoding).
pub const MAX_URL_TOOLSETS_BYTES: usize = 1024;

/// Which tools the URL asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `/mcp`: the surface `TOOL_MODE` selects.
    Default,
    /// `/mcp/all`: every exposed operation.
    All,
    /// `/mcp/x/…`: the operations of these toolsets (sorted, unique).
    Toolsets(BTreeSet<String>),
}

/// The surface of one MCP URL, for one caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Surface {
    pub scope: Scope,
    /// `/readonly`: GET/HEAD operations only.
    pub read_only: bool,
    /// What the operator's policy leaves of it for this caller (`None`:
    /// no rule applies, or no policy).
    pub narrowing: Option<Arc<Narrowing>>,
}

impl Default for Surface {
    fn default() -> Self {
        Self {
            scope: Scope::Default,
            read_only: false,
            narrowing: None,
        }
    }
}

/// What an operator policy leaves of a surface for one caller. It only
/// narrows: what the URL and the server settings do not serve, it never
/// adds. Deny wins over allow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Narrowing {
    /// Only reads.
    pub read_only: bool,
    /// Only operations of these toolsets (and `raw` for the raw tool);
    /// `None`: no such limit.
    pub toolsets: Option<BTreeSet<String>>,
    /// No operation of these toolsets.
    pub deny_toolsets: BTreeSet<String>,
    /// No tool of these names (operation tools and the fixed tools).
    pub deny_tools: BTreeSet<String>,
    /// Tools that need a person's confirmation before they run (recorded
    /// for the confirmation step; not enforced here).
    pub confirm_tools: BTreeSet<String>,
    /// The ids of the rules that narrowed, in file order.
    pub rules: Vec<String>,
}

impl Narrowing {
    /// Whether a tool named `name`, of `toolsets`, that reads only when
    /// `reads` is true, stays.
    pub fn keeps(&self, name: &str, toolsets: &[String], reads: bool) -> bool {
        !self.deny_tools.contains(name)
            && (reads || !self.read_only)
            && !toolsets.iter().any(|t| self.deny_toolsets.contains(t))
            && self
                .toolsets
                .as_ref()
                .is_none_or(|allowed| toolsets.iter().any(|t| allowed.contains(t)))
    }

    /// Whether the raw tool, which this narrowing keeps, may reach the
    /// operation `name` of `toolsets`: not when a rule denies it by name or
    /// by toolset. An allow-list of toolsets that names `raw` allows the
    /// raw tool for the rest of the API.
    pub fn lets_raw_reach(&self, name: &str, toolsets: &[String]) -> bool {
        !self.deny_tools.contains(name) && !toolsets.iter().any(|t| self.deny_toolsets.contains(t))
    }
}

/// Why a path is not an MCP URL of ours.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SurfaceError {
    #[error("not an MCP endpoint path")]
    NotMcp,
    #[error("`/mcp/x/` needs a comma-separated list of toolsets")]
    NoToolsets,
    #[error("a URL names at most {MAX_URL_TOOLSETS} toolsets in {MAX_URL_TOOLSETS_BYTES} bytes")]
    TooManyToolsets,
    #[error("a toolset name holds only a-z, 0-9, `_` and `.`")]
    MalformedToolset,
    #[error("unknown toolset `{name}`{hint} (see `aegis-gitea-mcp catalog --toolsets`)")]
    UnknownToolset { name: String, hint: String },
    #[error(
        "toolset `{name}` has no operation this server exposes (READ_ONLY, TOOLSETS, DISABLED_TOOLS)"
    )]
    NotExposed { name: String },
}

impl Surface {
    /// The surface of `path` (a request path, no query). `check` decides
    /// whether a toolset name is known, and may say what to use instead.
    /// One trailing slash names the same surface (`/mcp/` is `/mcp`): URLs
    /// get pasted that way, and a client that never finds the sign-in
    /// behind a 404 cannot say why.
    pub fn parse(
        path: &str,
        check: impl Fn(&str) -> Result<(), SurfaceError>,
    ) -> Result<Surface, SurfaceError> {
        let path = path.strip_suffix('/').unwrap_or(path);
        let rest = path.strip_prefix(MCP_PATH).ok_or(SurfaceError::NotMcp)?;
        let mut segments: Vec<&str> = match rest {
            "" => Vec::new(),
            _ => rest
                .strip_prefix('/')
                .ok_or(SurfaceError::NotMcp)?
                .split('/')
                .collect(),
        };
        let read_only = segments.last() == Some(&READONLY_SUFFIX);
        if read_only {
            segments.pop();
        }
        let scope = match segments.as_slice() {
            [] => Scope::Default,
            ["all"] => Scope::All,
            ["x"] | ["x", ""] => return Err(SurfaceError::NoToolsets),
            ["x", list] => Scope::Toolsets(parse_toolsets(list, &check)?),
            _ => return Err(SurfaceError::NotMcp),
        };
        Ok(Surface {
            scope,
            read_only,
            narrowing: None,
        })
    }

    /// The canonical path: toolsets sorted and unique, `/readonly` last.
    pub fn path(&self) -> String {
        let mut path = String::from(MCP_PATH);
        match &self.scope {
            Scope::Default => {}
            Scope::All => path.push_str("/all"),
            Scope::Toolsets(names) => {
                path.push_str("/x/");
                path.push_str(&names.iter().cloned().collect::<Vec<_>>().join(","));
            }
        }
        if self.read_only {
            path.push('/');
            path.push_str(READONLY_SUFFIX);
        }
        path
    }

    /// The toolsets the URL narrows to, if it names any.
    pub fn toolsets(&self) -> Option<&BTreeSet<String>> {
        match &self.scope {
            Scope::Toolsets(names) => Some(names),
            _ => None,
        }
    }
}

/// The toolset check of `catalog`: its toolsets and `raw` are known; for a
/// split tag the error names its groups.
pub fn catalog_toolsets(catalog: &Catalog) -> impl Fn(&str) -> Result<(), SurfaceError> + '_ {
    move |name| {
        if name == RAW_TOOLSET || catalog.has_toolset(name) {
            Ok(())
        } else {
            Err(SurfaceError::UnknownToolset {
                name: name.to_owned(),
                hint: unknown_toolset_hint(name),
            })
        }
    }
}

/// `a,b.c` (commas may arrive percent-encoded) → checked, sorted names.
fn parse_toolsets(
    list: &str,
    check: &impl Fn(&str) -> Result<(), SurfaceError>,
) -> Result<BTreeSet<String>, SurfaceError> {
    if list.len() > MAX_URL_TOOLSETS_BYTES * 3 {
        return Err(SurfaceError::TooManyToolsets);
    }
    let decoded = percent_encoding::percent_decode_str(list)
        .decode_utf8()
        .map_err(|_| SurfaceError::MalformedToolset)?;
    if decoded.len() > MAX_URL_TOOLSETS_BYTES {
        return Err(SurfaceError::TooManyToolsets);
    }
    let mut names = BTreeSet::new();
    for name in decoded.split(',') {
        if name.is_empty() {
            return Err(SurfaceError::NoToolsets);
        }
        let well_formed = name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.');
        if !well_formed {
            return Err(SurfaceError::MalformedToolset);
        }
        check(name)?;
        names.insert(name.to_owned());
        if names.len() > MAX_URL_TOOLSETS {
            return Err(SurfaceError::TooManyToolsets);
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(name: &str) -> Result<(), SurfaceError> {
        match name {
            "issue" | "repository.pulls" | "raw" => Ok(()),
            _ => Err(SurfaceError::UnknownToolset {
                name: name.to_owned(),
                hint: String::new(),
            }),
        }
    }

    fn parse(path: &str) -> Result<Surface, SurfaceError> {
        Surface::parse(path, known)
    }

    fn toolsets(names: &[&str]) -> Scope {
        Scope::Toolsets(names.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn the_four_shapes_parse() {
        assert_eq!(parse("/mcp").unwrap(), Surface::default());
        assert_eq!(parse("/mcp/all").unwrap().scope, Scope::All);
        assert_eq!(
            parse("/mcp/x/issue,repository.pulls").unwrap().scope,
            toolsets(&["issue", "repository.pulls"])
        );
        let read_only = parse("/mcp/x/issue/readonly").unwrap();
        assert!(read_only.read_only);
        assert_eq!(read_only.scope, toolsets(&["issue"]));
        assert!(parse("/mcp/readonly").unwrap().read_only);
        assert!(parse("/mcp/all/readonly").unwrap().read_only);
    }

    #[test]
    fn one_trailing_slash_names_the_same_surface() {
        for path in [
            "/mcp",
            "/mcp/readonly",
            "/mcp/all",
            "/mcp/all/readonly",
            "/mcp/x/issue",
            "/mcp/x/issue/readonly",
        ] {
            assert_eq!(parse(&format!("{path}/")), parse(path), "{path}/");
        }
        assert_eq!(parse("/mcp/").unwrap().path(), "/mcp");
    }

    #[test]
    fn the_canonical_path_sorts_and_dedups_toolsets() {
        let surface = parse("/mcp/x/repository.pulls,issue,issue/readonly").unwrap();
        assert_eq!(surface.path(), "/mcp/x/issue,repository.pulls/readonly");
        assert_eq!(parse("/mcp").unwrap().path(), "/mcp");
        assert_eq!(parse("/mcp/all").unwrap().path(), "/mcp/all");
    }

    #[test]
    fn percent_encoded_commas_are_commas() {
        assert_eq!(
            parse("/mcp/x/issue%2Craw").unwrap().scope,
            toolsets(&["issue", "raw"])
        );
    }

    #[test]
    fn an_unknown_toolset_is_an_error_not_an_empty_list() {
        assert!(matches!(
            parse("/mcp/x/issue,nope"),
            Err(SurfaceError::UnknownToolset { .. })
        ));
    }

    #[test]
    fn malformed_paths_are_refused() {
        for path in [
            "/mcpx",
            "/mcp//",
            "/mcp/x",
            "/mcp/x/",
            "/mcp/x/issue,",
            "/mcp/x/,issue",
            "/mcp/x/ISSUE",
            "/mcp/x/issue/extra",
            "/mcp/all/x",
            "/mcp/readonly/readonly",
            "/mcp/x/is%20sue",
            "/mcp/x/%ff",
            "/other",
        ] {
            assert!(parse(path).is_err(), "{path}");
        }
    }

    #[test]
    fn a_toolset_list_is_bounded_in_count_and_size() {
        let many = vec!["issue"; MAX_URL_TOOLSETS + 5].join(",");
        // Duplicates collapse: still one name.
        assert!(parse(&format!("/mcp/x/{many}")).is_ok());
        let long = "a".repeat(MAX_URL_TOOLSETS_BYTES + 1);
        assert_eq!(
            parse(&format!("/mcp/x/{long}")),
            Err(SurfaceError::TooManyToolsets)
        );
    }
}
