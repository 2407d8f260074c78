//! Who asks, as far as the tools are concerned. The admin token (stdio,
//! the static bearer, unauthenticated loopback) may act as another user
//! through Gitea's `Sudo` header; a person signed in with OAuth acts only
//! as themselves: an agent of theirs must not impersonate anybody, even
//! when the person is a site admin. So `sudo` is accepted only from the
//! admin token; no listed schema repeats it, the server's instructions
//! describe it once (`docs/tools.md`, "Sudo").

use crate::identity::IdentityMode;

/// The two kinds of caller the tool list and validation tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    /// The operator's admin token: `sudo` is listed and accepted.
    AdminToken,
    /// A person's own Gitea session: no `sudo`.
    Person,
}

impl Caller {
    pub fn of(mode: IdentityMode) -> Self {
        match mode {
            IdentityMode::Oauth => Self::Person,
            IdentityMode::Stdio | IdentityMode::Bearer | IdentityMode::Loopback => Self::AdminToken,
        }
    }

    pub fn may_sudo(self) -> bool {
        self == Self::AdminToken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_admin_token_may_sudo() {
        assert!(Caller::of(IdentityMode::Stdio).may_sudo());
        assert!(Caller::of(IdentityMode::Bearer).may_sudo());
        assert!(Caller::of(IdentityMode::Loopback).may_sudo());
        assert!(!Caller::of(IdentityMode::Oauth).may_sudo());
    }
}
