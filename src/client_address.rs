//! The address a request comes from, as the HTTP layer worked it out
//! (the TCP peer, or the `X-Forwarded-For` hop a trusted proxy names), and
//! the network it counts against for per-network quotas. A leaf: the HTTP
//! layer puts a [`ClientAddress`] into each request's extensions, and the
//! OAuth registration reads it.

use std::net::IpAddr;

/// The client's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

impl ClientAddress {
    /// The network this address counts against: its IPv4 /24 or IPv6 /48,
    /// the blocks one party usually holds (a home, an office, a VM's
    /// provider allocation), so a quota per network is not undone by
    /// hopping addresses inside it. Written like `203.0.113.0/24`.
    pub fn network(self) -> String {
        match self.0.to_canonical() {
            IpAddr::V4(v4) => {
                let [a, b, c, _] = v4.octets();
                format!("{a}.{b}.{c}.0/24")
            }
            IpAddr::V6(v6) => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}::/48", s[0], s[1], s[2])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(ip: &str) -> String {
        ClientAddress(ip.parse().unwrap()).network()
    }

    #[test]
    fn ipv4_addresses_count_per_24() {
        assert_eq!(network("203.0.113.7"), "203.0.113.0/24");
        assert_eq!(network("203.0.113.250"), network("203.0.113.1"));
        assert_ne!(network("203.0.114.1"), network("203.0.113.1"));
    }

    #[test]
    fn ipv6_addresses_count_per_48_and_mapped_ipv4_as_ipv4() {
        assert_eq!(network("2001:db8:abcd:12::1"), "2001:db8:abcd::/48");
        assert_eq!(
            network("2001:db8:abcd:ffff::9"),
            network("2001:db8:abcd::1")
        );
        assert_eq!(network("::ffff:198.51.100.9"), "198.51.100.0/24");
    }
}
