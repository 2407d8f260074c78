//! Which addresses a client-metadata-document fetch may connect to: only
//! globally routable unicast ones. The table is the IANA IPv4 and IPv6
//! Special-Purpose Address Registries (as of 2025), every entry refused
//! whether or not IANA marks it globally reachable (no client's metadata
//! lives on an AS112 server or a TURN anycast address), plus multicast, the
//! reserved ranges, and the forms that embed an IPv4 address (mapped,
//! compatible, translated, NAT64, 6to4, Teredo), whose IPv4 part is checked
//! or which are refused outright.
//!
//! Hand-written: no well-kept crate carries the registries, and the
//! standard library's `is_global` is unstable.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 special-purpose blocks (RFC 6890 and its updates), multicast and
/// the reserved 240/4 with the limited broadcast.
#[rustfmt::skip]
const V4_SPECIAL: &[(u32, u8)] = &[
    (0x0000_0000, 8),   // 0.0.0.0/8 "this network"
    (0x0A00_0000, 8),   // 10.0.0.0/8 private
    (0x6440_0000, 10),  // 100.64.0.0/10 shared address space (CGN)
    (0x7F00_0000, 8),   // 127.0.0.0/8 loopback
    (0xA9FE_0000, 16),  // 169.254.0.0/16 link-local (cloud metadata)
    (0xAC10_0000, 12),  // 172.16.0.0/12 private
    (0xC000_0000, 24),  // 192.0.0.0/24 IETF protocol assignments
    (0xC000_0200, 24),  // 192.0.2.0/24 documentation
    (0xC01F_C400, 24),  // 192.31.196.0/24 AS112-v4
    (0xC034_C100, 24),  // 192.52.193.0/24 AMT
    (0xC058_6300, 24),  // 192.88.99.0/24 6to4 relay anycast (deprecated)
    (0xC0A8_0000, 16),  // 192.168.0.0/16 private
    (0xC0AF_3000, 24),  // 192.175.48.0/24 direct delegation AS112
    (0xC612_0000, 15),  // 198.18.0.0/15 benchmarking
    (0xC633_6400, 24),  // 198.51.100.0/24 documentation
    (0xCB00_7100, 24),  // 203.0.113.0/24 documentation
    (0xE000_0000, 4),   // 224.0.0.0/4 multicast
    (0xF000_0000, 4),   // 240.0.0.0/4 reserved, and 255.255.255.255
];

/// IPv6 special-purpose blocks, multicast, and the deprecated site-local
/// range. The embedded-IPv4 forms are handled before this table.
#[rustfmt::skip]
const V6_SPECIAL: &[(u128, u8)] = &[
    (0, 96),                                       // ::/96 unspecified, loopback, IPv4-compatible (deprecated)
    (0x0000_0000_0000_0000_0000_ffff_0000_0000, 96), // ::ffff:0:0/96 IPv4-mapped (checked before)
    (0x0000_0000_0000_0000_ffff_0000_0000_0000, 96), // ::ffff:0:0:0/96 IPv4-translated (RFC 2765)
    (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // 64:ff9b:1::/48 local-use NAT64
    (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // 100::/64 discard-only
    (0x0100_0000_0000_0001_0000_0000_0000_0000, 64), // 100:0:0:1::/64 dummy prefix
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // 2001::/23 IETF protocol assignments (Teredo 2001::/32, ORCHID, benchmarking …)
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // 2001:db8::/32 documentation
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16), // 2002::/16 6to4
    (0x2620_004f_8000_0000_0000_0000_0000_0000, 48), // 2620:4f:8000::/48 direct delegation AS112
    (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20), // 3fff::/20 documentation
    (0x5f00_0000_0000_0000_0000_0000_0000_0000, 16), // 5f00::/16 segment routing SIDs
    (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // fc00::/7 unique local
    (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // fe80::/10 link-local
    (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10), // fec0::/10 site-local (deprecated)
    (0xff00_0000_0000_0000_0000_0000_0000_0000, 8),  // ff00::/8 multicast
];

/// The well-known NAT64 prefix 64:ff9b::/96 (RFC 6052): its last 32 bits
/// are an IPv4 address, reached through the translator.
const NAT64_PREFIX: u128 = 0x0064_ff9b_0000_0000_0000_0000_0000_0000;

fn in_block<T>(address: T, block: T, len: u8, bits: u8) -> bool
where
    T: Copy + std::ops::Shr<u8, Output = T> + PartialEq,
{
    if len == 0 {
        return true;
    }
    let shift = bits - len;
    (address >> shift) == (block >> shift)
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let address = u32::from(ip);
    !V4_SPECIAL
        .iter()
        .any(|&(block, len)| in_block(address, block, len, 32))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let address = u128::from(ip);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    if in_block(address, NAT64_PREFIX, 96, 128) {
        // Truncation keeps the low 32 bits: the embedded IPv4 address.
        return is_public_v4(Ipv4Addr::from(address as u32));
    }
    !V6_SPECIAL
        .iter()
        .any(|&(block, len)| in_block(address, block, len, 128))
}

/// True for a globally routable unicast address that is in no
/// special-purpose block.
pub fn is_public_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(ip: &str) -> bool {
        is_public_address(ip.parse().unwrap())
    }

    #[test]
    fn private_loopback_and_link_local_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "192.0.0.9",
            "192.31.196.1",
            "198.18.0.1",
            "::",
            "::1",
            "fe80::1",
            "fd00::1",
            "ff02::1",
        ] {
            assert!(!public(ip), "{ip}");
        }
    }

    /// F15: every form that carries an IPv4 address, and the blocks the
    /// old filter treated as public.
    #[test]
    fn embedded_ipv4_forms_and_special_ipv6_blocks_are_not_public() {
        for ip in [
            "::ffff:10.0.0.1",                      // mapped
            "::127.0.0.1",                          // IPv4-compatible
            "::a9fe:a9fe",                          // IPv4-compatible 169.254.169.254
            "::ffff:0:7f00:1",                      // IPv4-translated 127.0.0.1
            "64:ff9b::a9fe:a9fe",                   // NAT64 of 169.254.169.254
            "64:ff9b::a00:1",                       // NAT64 of 10.0.0.1
            "64:ff9b:1::1",                         // local-use NAT64
            "2002:7f00:1::1",                       // 6to4 of 127.0.0.1
            "2001::1",                              // Teredo
            "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo
            "2001:2::1",                            // benchmarking
            "2001:db8::1",                          // documentation
            "3fff::1",                              // documentation
            "fec0::1",                              // site-local
            "100::1",                               // discard
            "5f00::1",                              // SRv6
        ] {
            assert!(!public(ip), "{ip}");
        }
    }

    #[test]
    fn ordinary_internet_addresses_are_public() {
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "8.8.8.8",
            "2606:4700::1",
            "2a00:1450::1",
            "64:ff9b::808:808",
        ] {
            assert!(public(ip), "{ip}");
        }
    }
}
