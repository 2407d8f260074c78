//! How each MCP client is pointed at the gateway: one place for the text,
//! shared by `setup`'s output and the web `/account` page.
//!
//! Every snippet is a pure function of the MCP endpoint URL
//! (`PUBLIC_BASE_URL/mcp`) and holds no secret: with OAuth, clients discover
//! the sign-in from the URL by themselves ([`connector_snippets`]); without
//! it, each request carries the static bearer, which the snippets name as
//! the placeholder [`BEARER_PLACEHOLDER`] ([`bearer_snippets`]).

use serde_json::json;

/// One MCP client and how to add the gateway to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorSnippet {
    /// The client, as people know it (`"Claude Code"`).
    pub client: &'static str,
    /// Where the snippet goes, one or two sentences of plain text.
    pub how: String,
    /// What to paste or run (a URL, a command or a JSON document).
    pub snippet: String,
}

/// The name the gateway gets in clients that ask for one.
pub const SERVER_NAME: &str = "aegis";

/// Snippets for claude.ai custom connectors, Le Chat, Claude Desktop, Claude
/// Code, Cursor, VS Code and MCP Inspector, in that order, filled with
/// `mcp_url` (the gateway's `PUBLIC_BASE_URL/mcp`).
pub fn connector_snippets(mcp_url: &str) -> Vec<ConnectorSnippet> {
    vec![
        ConnectorSnippet {
            client: "claude.ai",
            how: "Settings → Connectors → Add custom connector: paste the URL, then Connect \
                  and sign in (on Team and Enterprise plans an owner adds it first, under \
                  Organization settings → Connectors)."
                .to_owned(),
            snippet: mcp_url.to_owned(),
        },
        ConnectorSnippet {
            client: "Le Chat",
            how: "Intelligence → Connectors → Add connector → Custom MCP connector: paste \
                  the URL as the server, choose OAuth 2.1 authentication if asked, then \
                  Connect and sign in."
                .to_owned(),
            snippet: mcp_url.to_owned(),
        },
        ConnectorSnippet {
            client: "Claude Desktop",
            how: "Settings → Connectors → Add custom connector with the URL (as on claude.ai). \
                  Or, in claude_desktop_config.json, bridge through mcp-remote (needs Node.js):"
                .to_owned(),
            snippet: pretty(&json!({
                "mcpServers": {
                    SERVER_NAME: {
                        "command": "npx",
                        "args": ["-y", "mcp-remote", mcp_url],
                    }
                }
            })),
        },
        ConnectorSnippet {
            client: "Claude Code",
            how: "Run in a terminal, then /mcp in Claude Code to sign in:".to_owned(),
            snippet: format!(
                "claude mcp add --transport http {SERVER_NAME} {}",
                shell_word(mcp_url)
            ),
        },
        ConnectorSnippet {
            client: "Cursor",
            how: "Add to ~/.cursor/mcp.json (or .cursor/mcp.json in a project):".to_owned(),
            snippet: pretty(&json!({
                "mcpServers": {
                    SERVER_NAME: { "url": mcp_url }
                }
            })),
        },
        ConnectorSnippet {
            client: "VS Code",
            how: "Add to .vscode/mcp.json in the workspace (or run MCP: Add Server… → HTTP):"
                .to_owned(),
            snippet: pretty(&json!({
                "servers": {
                    SERVER_NAME: { "type": "http", "url": mcp_url }
                }
            })),
        },
        ConnectorSnippet {
            client: "MCP Inspector",
            how: "Run it, open the page it prints, choose Transport Type \"Streamable HTTP\", \
                  enter the URL and Connect:"
                .to_owned(),
            snippet: format!("npx @modelcontextprotocol/inspector\n# URL: {mcp_url}"),
        },
    ]
}

/// What a bearer snippet holds where the token goes: the value is in the
/// env file, never printed.
pub const BEARER_PLACEHOLDER: &str = "<MCP_BEARER_TOKEN>";

/// Snippets for the clients that can send a fixed `Authorization` header
/// (Claude Desktop through mcp-remote, Claude Code, Cursor, VS Code, MCP
/// Inspector), for a gateway without OAuth. Hosted connectors (claude.ai,
/// Le Chat) cannot: they need OAuth.
pub fn bearer_snippets(mcp_url: &str) -> Vec<ConnectorSnippet> {
    let header = format!("Authorization: Bearer {BEARER_PLACEHOLDER}");
    vec![
        ConnectorSnippet {
            client: "Claude Desktop",
            how: "In claude_desktop_config.json, bridge through mcp-remote (needs Node.js), \
                  with the token from the env file:"
                .to_owned(),
            snippet: pretty(&json!({
                "mcpServers": {
                    SERVER_NAME: {
                        "command": "npx",
                        "args": ["-y", "mcp-remote", mcp_url, "--header", header],
                    }
                }
            })),
        },
        ConnectorSnippet {
            client: "Claude Code",
            how: "Run in a terminal, with the token from the env file:".to_owned(),
            snippet: format!(
                "claude mcp add --transport http {SERVER_NAME} {} --header {}",
                shell_word(mcp_url),
                shell_word(&header)
            ),
        },
        ConnectorSnippet {
            client: "Cursor",
            how: "Add to ~/.cursor/mcp.json (or .cursor/mcp.json in a project), with the \
                  token from the env file:"
                .to_owned(),
            snippet: pretty(&json!({
                "mcpServers": {
                    SERVER_NAME: {
                        "url": mcp_url,
                        "headers": {"Authorization": format!("Bearer {BEARER_PLACEHOLDER}")},
                    }
                }
            })),
        },
        ConnectorSnippet {
            client: "VS Code",
            how: "Add to .vscode/mcp.json in the workspace; VS Code asks for the token once \
                  and keeps it in its secret storage:"
                .to_owned(),
            snippet: pretty(&json!({
                "inputs": [{
                    "type": "promptString",
                    "id": "aegis-bearer",
                    "description": "MCP_BEARER_TOKEN of the Aegis gateway",
                    "password": true,
                }],
                "servers": {
                    SERVER_NAME: {
                        "type": "http",
                        "url": mcp_url,
                        "headers": {"Authorization": "Bearer ${input:aegis-bearer}"},
                    }
                }
            })),
        },
        ConnectorSnippet {
            client: "MCP Inspector",
            how: "Run it, open the page it prints, choose Transport Type \"Streamable HTTP\", \
                  enter the URL, and under Authentication the header `Authorization` with \
                  `Bearer` and the token:"
                .to_owned(),
            snippet: format!("npx @modelcontextprotocol/inspector\n# URL: {mcp_url}"),
        },
    ]
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).expect("a JSON value always serializes")
}

/// `value` as one POSIX shell word: as is when it holds only characters no
/// shell treats specially, else single-quoted.
pub(crate) fn shell_word(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.,:/@%+=".contains(c));
    if plain {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://mcp.example.com/mcp";

    fn by_client(client: &str) -> ConnectorSnippet {
        connector_snippets(URL)
            .into_iter()
            .find(|s| s.client == client)
            .unwrap_or_else(|| panic!("no snippet for {client}"))
    }

    #[test]
    fn bearer_snippets_carry_the_header_and_never_a_sign_in() {
        let snippets = bearer_snippets(URL);
        let clients: Vec<_> = snippets.iter().map(|s| s.client).collect();
        assert_eq!(
            clients,
            [
                "Claude Desktop",
                "Claude Code",
                "Cursor",
                "VS Code",
                "MCP Inspector"
            ]
        );
        for snippet in &snippets {
            let text = format!("{} {}", snippet.how, snippet.snippet);
            assert!(
                !text.to_lowercase().contains("sign in"),
                "{}",
                snippet.client
            );
            assert!(text.contains("Bearer"), "{}", snippet.client);
            assert!(text.contains(URL), "{}", snippet.client);
        }
    }

    #[test]
    fn every_client_is_covered_once_in_order() {
        let clients: Vec<_> = connector_snippets(URL).iter().map(|s| s.client).collect();
        assert_eq!(
            clients,
            [
                "claude.ai",
                "Le Chat",
                "Claude Desktop",
                "Claude Code",
                "Cursor",
                "VS Code",
                "MCP Inspector"
            ]
        );
    }

    #[test]
    fn every_snippet_carries_the_url_and_explains_itself() {
        for s in connector_snippets(URL) {
            assert!(s.snippet.contains(URL), "{}: {}", s.client, s.snippet);
            assert!(!s.how.trim().is_empty(), "{}", s.client);
        }
    }

    #[test]
    fn hosted_connectors_get_the_bare_url() {
        assert_eq!(by_client("claude.ai").snippet, URL);
        assert_eq!(by_client("Le Chat").snippet, URL);
    }

    #[test]
    fn claude_code_is_one_command() {
        assert_eq!(
            by_client("Claude Code").snippet,
            "claude mcp add --transport http aegis https://mcp.example.com/mcp"
        );
    }

    #[test]
    fn json_snippets_parse_and_name_the_url_where_each_client_reads_it() {
        let cursor: serde_json::Value = serde_json::from_str(&by_client("Cursor").snippet).unwrap();
        assert_eq!(cursor["mcpServers"]["aegis"]["url"], URL);
        assert!(by_client("Cursor").how.contains("~/.cursor/mcp.json"));

        let vscode: serde_json::Value =
            serde_json::from_str(&by_client("VS Code").snippet).unwrap();
        assert_eq!(vscode["servers"]["aegis"]["type"], "http");
        assert_eq!(vscode["servers"]["aegis"]["url"], URL);
        assert!(by_client("VS Code").how.contains(".vscode/mcp.json"));

        let desktop: serde_json::Value =
            serde_json::from_str(&by_client("Claude Desktop").snippet).unwrap();
        assert_eq!(
            desktop["mcpServers"]["aegis"]["args"],
            json!(["-y", "mcp-remote", URL])
        );
    }

    #[test]
    fn json_snippets_escape_the_url() {
        let odd = "http://127.0.0.1:8080/a\"b/mcp";
        let cursor = connector_snippets(odd)
            .into_iter()
            .find(|s| s.client == "Cursor")
            .unwrap();
        let value: serde_json::Value = serde_json::from_str(&cursor.snippet).unwrap();
        assert_eq!(value["mcpServers"]["aegis"]["url"], odd);
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(
            shell_word("http://127.0.0.1:8080/mcp"),
            "http://127.0.0.1:8080/mcp"
        );
        // Brackets are glob characters (zsh fails on an unmatched one).
        assert_eq!(
            shell_word("http://[::1]:8080/mcp"),
            "'http://[::1]:8080/mcp'"
        );
        assert_eq!(shell_word("./my env"), "'./my env'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
    }
}
