//! The `aegis-gitea-mcp` binary: see [`aegis_gitea_mcp::cli`].

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    aegis_gitea_mcp::cli::run()
}
