//! Which build this is: the package version and, when known, the commit
//! (`build.rs`). `/health`, `/`, the startup log, the `aegis_build_info`
//! metric and the store's schema history all say it the same way. A leaf.

/// The package version, then the commit in parentheses when the build
/// knew it: `0.1.0 (3a60750c1d2e)`.
pub const VERSION: &str = env!("AEGIS_BUILD_VERSION");

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_starts_with_the_package_version() {
        assert!(super::VERSION.starts_with(env!("CARGO_PKG_VERSION")));
    }
}
