//! Which addresses a caller's URL may not reach.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The refused range `address` is in (`"loopback"`, `"private"`, `"link-local"`, ...), or
/// `None` for an address a caller's URL may reach. An IPv6 address that embeds an IPv4 one
/// (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
/// `2002::/16`) is judged by the IPv4 address it carries.
///
/// ```
/// use agentweave_runtime::outbound::refused_range;
///
/// assert_eq!(refused_range("127.0.0.1".parse().unwrap()), Some("loopback"));
/// assert_eq!(refused_range("169.254.169.254".parse().unwrap()), Some("link-local"));
/// assert_eq!(refused_range("::ffff:10.0.0.1".parse().unwrap()), Some("private"));
/// assert_eq!(refused_range("93.184.215.14".parse().unwrap()), None);
/// ```
pub fn refused_range(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [o0, o1, _, _] = a.octets();
    if o0 == 0 {
        Some("unspecified")
    } else if a.is_loopback() {
        Some("loopback")
    } else if a.is_private() {
        Some("private")
    } else if o0 == 100 && (o1 & 0xc0) == 64 {
        Some("shared (carrier-grade NAT)")
    } else if a.is_link_local() {
        Some("link-local")
    } else if a.is_multicast() {
        Some("multicast")
    } else if a.is_broadcast() {
        Some("broadcast")
    } else if o0 >= 240 {
        Some("reserved")
    } else if o0 == 192 && o1 == 0 && a.octets()[2] == 0 {
        Some("IETF protocol assignments")
    } else {
        None
    }
}

fn refused_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    if a.is_unspecified() {
        return Some("unspecified");
    }
    if a.is_loopback() {
        return Some("loopback");
    }
    if let Some(v4) = embedded_v4(a) {
        return refused_v4(v4);
    }
    if s[0] & 0xff00 == 0xff00 {
        Some("multicast")
    } else if s[0] & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if s[0] & 0xffc0 == 0xfec0 {
        Some("site-local")
    } else if s[0] & 0xfe00 == 0xfc00 {
        Some("private")
    } else {
        None
    }
}

/// The IPv4 address an IPv6 one carries: IPv4-mapped, IPv4-compatible, NAT64 or 6to4.
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    let tail =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if let Some(v4) = a.to_ipv4_mapped() {
        Some(v4)
    } else if s[..6] == [0, 0, 0, 0, 0, 0] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // IPv4-compatible, or NAT64's well-known prefix.
        Some(tail(s[6], s[7]))
    } else if s[0] == 0x2002 {
        Some(tail(s[1], s[2]))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_internal_range_is_refused_and_public_ones_are_not() {
        for (address, range) in [
            ("0.0.0.0", "unspecified"),
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "shared (carrier-grade NAT)"),
            ("169.254.169.254", "link-local"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local"),
            ("2002:7f00:1::", "loopback"),
            ("fe80::1", "link-local"),
            ("fd00::1", "private"),
            ("ff02::1", "multicast"),
        ] {
            assert_eq!(
                refused_range(address.parse().unwrap()),
                Some(range),
                "{address}"
            );
        }
        for public in ["93.184.215.14", "1.1.1.1", "2606:4700::1111", "172.32.0.1"] {
            assert_eq!(refused_range(public.parse().unwrap()), None, "{public}");
        }
    }
}
