//! Which image URLs name this machine or a private network. A provider — or a self-hosted
//! server such as vLLM — fetches an image URL it is sent, so a URL that names `localhost`,
//! `169.254.169.254` (a cloud's metadata service) or a private address would have that server
//! fetch from inside its own network on behalf of whoever wrote the URL: a user's input, a tool's
//! output, or a saved program's demos. Such URLs are refused unless this process allows them
//! ([`allow_private_urls`]).
//!
//! The host is read as written: a name that resolves to a private address (DNS rebinding) is not
//! caught here; keep the server that fetches images on a network that cannot reach what it must
//! not.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, Ordering};

static ALLOWED: AtomicBool = AtomicBool::new(false);

/// Lets image URLs name this machine or a private or link-local network, for this process (off
/// by default): for a model server and images on your own network. Affects every
/// [`Image::from_url`](super::Image::from_url), inputs and demos alike.
///
/// ```
/// use signet::media::{Image, allow_private_urls};
/// assert!(Image::from_url("http://10.0.0.5/cat.png").is_err());
/// allow_private_urls(true);
/// assert!(Image::from_url("http://10.0.0.5/cat.png").is_ok());
/// allow_private_urls(false);
/// ```
pub fn allow_private_urls(allowed: bool) {
    ALLOWED.store(allowed, Ordering::SeqCst);
}

/// Why `host` (as a URL writes it: a name, an IPv4 address in any form `inet_aton` reads, or a
/// bracketed IPv6 address, with or without a port and user info) is refused, if it is.
pub(crate) fn private_host(authority: &str) -> Option<&'static str> {
    if ALLOWED.load(Ordering::SeqCst) {
        return None;
    }
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let host = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => host.split(':').next().unwrap_or(host),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return Some("this machine");
    }
    let ip = host
        .parse::<Ipv6Addr>()
        .map(IpAddr::V6)
        .ok()
        .or_else(|| ipv4(&host).map(IpAddr::V4))?;
    classify(ip)
}

fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_loopback() || v4.is_unspecified() {
                Some("this machine")
            } else if v4.is_link_local() {
                Some("a link-local address (a cloud's metadata service lives there)")
            } else if v4.is_private() || (a == 100 && (64..128).contains(&b)) {
                Some("a private network")
            } else if v4.is_broadcast() || a >= 224 {
                Some("a broadcast or multicast address")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return classify(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            if v6.is_loopback() || v6.is_unspecified() {
                Some("this machine")
            } else if first & 0xffc0 == 0xfe80 {
                Some("a link-local address (a cloud's metadata service lives there)")
            } else if first & 0xfe00 == 0xfc00 {
                Some("a private network")
            } else if first & 0xff00 == 0xff00 {
                Some("a broadcast or multicast address")
            } else {
                None
            }
        }
    }
}

/// An IPv4 address in any form `inet_aton` (and so curl and most HTTP clients) reads: one to four
/// parts, each decimal, octal (`0` first) or hexadecimal (`0x` first); the last part fills the
/// remaining bytes (`127.1`, `2130706433`, `0x7f000001`).
fn ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        let number = if let Some(hex) = part.strip_prefix("0x") {
            u64::from_str_radix(hex, 16).ok()?
        } else if part.len() > 1 && part.starts_with('0') {
            u64::from_str_radix(&part[1..], 8).ok()?
        } else {
            part.parse::<u64>().ok()?
        };
        numbers.push(number);
    }
    let (last, leading) = numbers.split_last()?;
    let mut value: u64 = 0;
    for (i, number) in leading.iter().enumerate() {
        if *number > 255 {
            return None;
        }
        value |= number << (8 * (3 - i));
    }
    let room = 8 * (4 - leading.len()) as u32;
    if *last >= 1u64 << room {
        return None;
    }
    Some(Ipv4Addr::from((value | last) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_private_and_link_local_hosts_are_refused_in_every_spelling() {
        for host in [
            "localhost",
            "LOCALHOST.",
            "api.localhost:8080",
            "127.0.0.1",
            "127.1",
            "2130706433",
            "0x7f000001",
            "0177.0.0.1",
            "user:pw@127.0.0.1:80",
            "0.0.0.0",
            "[::1]",
            "[::1]:8080",
            "[::ffff:127.0.0.1]",
            "[::ffff:a9fe:a9fe]",
            "169.254.169.254",
            "[fe80::1]",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1:3000",
            "100.64.0.1",
            "[fd00::1]",
            "224.0.0.1",
        ] {
            assert!(private_host(host).is_some(), "{host}");
        }
        for host in [
            "example.com",
            "example.com:443",
            "8.8.8.8",
            "172.32.0.1",
            "[2001:db8::1]",
            "1.2.3.4.5",
            "cafe.be",
            "0x7f.example.com",
        ] {
            assert_eq!(private_host(host), None, "{host}");
        }
    }
}
