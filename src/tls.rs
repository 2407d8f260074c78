//! TLS set-up shared by every HTTP client of the process.

use std::sync::Once;

/// Installs rustls' ring crypto provider once. reqwest is built without a
/// provider of its own (so only one crypto backend is compiled in) and
/// panics if none is installed before a client is built.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means another provider is already installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
