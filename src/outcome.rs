//! How a tool call ended, in the one vocabulary that the metrics (the
//! `outcome` label), the activity figures (stored as its name) and the
//! call's trace span read. A leaf: it imports nothing of ours, so each of
//! them can name it without a copy of its own.

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallOutcome {
    /// It was sent to Gitea, which answered with success.
    Ok,
    /// It was sent, and Gitea answered an error or the request failed
    /// (transport, timeout, the result pipeline).
    Error,
    /// Nothing went to Gitea: an unknown or unexposed tool, arguments that
    /// do not fit, a read-only grant, a call waiting for its person or one
    /// they denied, the audit log unavailable.
    Refused,
}

impl CallOutcome {
    /// Every outcome, in the order the pages and tests list them.
    pub const ALL: [Self; 3] = [Self::Ok, Self::Error, Self::Refused];

    /// Its name: a metric label value, a stored activity outcome, a span's
    /// `aegis.outcome`. Stored names never change (an older binary reads
    /// them back).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Refused => "refused",
        }
    }

    /// The outcome named `text`, as [`CallOutcome::as_str`] writes it.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.as_str() == text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_reads_back_from_its_name() {
        for outcome in CallOutcome::ALL {
            assert_eq!(CallOutcome::parse(outcome.as_str()), Some(outcome));
        }
        assert_eq!(CallOutcome::parse("waiting"), None);
    }
}
