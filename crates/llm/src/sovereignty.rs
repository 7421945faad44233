//! Strict sovereignty: only local endpoints and local backends.
//!
//! Under `strict_sovereign = true` (the default) the service refuses:
//!
//! * the Anthropic backend (a remote API by design);
//! * an endpoint whose host is not loopback — `127.0.0.0/8`, `::1`
//!   (also as `::ffff:127.x.y.z`) or the name `localhost` — and is not
//!   listed in `local_hosts`.
//!
//! The name is only the first check. Every connection goes through
//! [`CheckedResolver`], so what is checked is the address koas actually
//! connects to:
//!
//! * `localhost` (with or without a trailing dot, any case) is answered by
//!   koas itself with `127.0.0.1` and `::1`; no DNS query is sent;
//! * an IP address in the URL must be loopback or listed;
//! * a name listed in `local_hosts` is resolved once, and every address it
//!   resolves to must be loopback, on a private network (`10/8`,
//!   `172.16/12`, `192.168/16`, link-local `169.254/16`, `fc00::/7`,
//!   `fe80::/10`) or itself listed; the connection then goes to exactly
//!   those checked addresses;
//! * any other name is refused before it is resolved.
//!
//! Redirects are never followed (see `backend::http`), so the configured
//! endpoint is the only place a request goes.
//!
//! The user opts out with `--no-strict-sovereign` or
//! `strict_sovereign = false`.

use crate::config::{BackendKind, LlmConfig};
use crate::error::LlmError;
use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use url::{Host, Url};

/// Checks the config against strict sovereignty; `Ok` when it is off.
pub fn check_sovereignty(config: &LlmConfig) -> Result<(), LlmError> {
    if !config.strict_sovereign {
        return Ok(());
    }
    if config.backend == BackendKind::Anthropic {
        return Err(LlmError::Sovereignty(
            "the anthropic (claude) backend is a non-local API; strict sovereignty refuses it \
             (use --no-strict-sovereign or strict_sovereign = false to allow it)"
                .to_string(),
        ));
    }
    // Every endpoint: one remote server among local ones would still
    // receive documents.
    for endpoint in config.endpoints() {
        let endpoint = endpoint.url;
        let url = Url::parse(&endpoint)
            .map_err(|e| LlmError::Config(format!("endpoint {endpoint:?}: {e}")))?;
        let host = url
            .host()
            .ok_or_else(|| LlmError::Config(format!("endpoint {endpoint:?} has no host")))?;
        if !is_local(&host, &config.local_hosts) {
            return Err(LlmError::Sovereignty(format!(
                "endpoint {endpoint} is not on this machine (host {host} is neither loopback nor \
                 listed in local_hosts); strict sovereignty refuses it (use --no-strict-sovereign, \
                 strict_sovereign = false, or add the host to local_hosts)"
            )));
        }
    }
    Ok(())
}

/// `true` when `host` is loopback or declared local. This checks the
/// name as written; the addresses it resolves to are checked when koas
/// connects.
pub fn is_local(host: &Host<&str>, local_hosts: &[String]) -> bool {
    match host {
        Host::Domain(name) => {
            let name = name.trim_end_matches('.');
            name.eq_ignore_ascii_case("localhost") || listed(local_hosts, name)
        }
        Host::Ipv4(ip) => is_local_address(IpAddr::V4(*ip), local_hosts),
        Host::Ipv6(ip) => is_local_address(IpAddr::V6(*ip), local_hosts),
    }
}

/// `true` when `name` (a host name or an IP address as text) is listed in
/// `local_hosts`, ignoring case, brackets and a trailing dot.
fn listed(local_hosts: &[String], name: &str) -> bool {
    let name = name.trim_end_matches('.');
    local_hosts.iter().any(|h| {
        h.trim()
            .trim_matches(['[', ']'])
            .trim_end_matches('.')
            .eq_ignore_ascii_case(name)
    })
}

/// `true` for a loopback address: `127.0.0.0/8`, `::1`, or `127.x.y.z`
/// mapped into IPv6.
pub fn is_loopback_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// `true` for an address on a private network: `10/8`, `172.16/12`,
/// `192.168/16`, link-local `169.254/16`, unique-local `fc00::/7`,
/// link-local `fe80::/10` (IPv4 ones also when mapped into IPv6).
pub fn is_private_address(ip: IpAddr) -> bool {
    let v4 = |v4: Ipv4Addr| v4.is_private() || v4.is_link_local();
    match ip {
        IpAddr::V4(a) => v4(a),
        IpAddr::V6(a) => {
            let first = a.segments()[0];
            (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || a.to_ipv4_mapped().is_some_and(v4)
        }
    }
}

/// `true` when strict sovereignty lets koas connect to `ip` given as an
/// address: loopback, or listed in `local_hosts`.
pub fn is_local_address(ip: IpAddr, local_hosts: &[String]) -> bool {
    is_loopback_address(ip) || listed(local_hosts, &ip.to_string())
}

/// Why strict sovereignty refused a connection. It travels inside the
/// `io::Error` the resolver returns, so the HTTP layer can tell a refusal
/// (never retried) from a failed DNS lookup (retried).
#[derive(Debug)]
pub(crate) struct Refusal(pub(crate) String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

/// Name resolution: `host:port` to the addresses to try, in order.
pub(crate) type Lookup = Arc<dyn Fn(&str) -> io::Result<Vec<SocketAddr>> + Send + Sync>;

/// The system resolver (`getaddrinfo`).
fn system_lookup(netloc: &str) -> io::Result<Vec<SocketAddr>> {
    netloc.to_socket_addrs().map(Iterator::collect)
}

const OPT_OUT: &str = "use --no-strict-sovereign or strict_sovereign = false to allow it";

/// The resolver of every connection the HTTP client makes: it checks the
/// addresses, not only the name, and hands the HTTP client exactly the
/// addresses it checked, so the DNS answer that was checked is the one
/// connected to (no second lookup in between).
#[derive(Clone)]
pub(crate) struct CheckedResolver {
    strict: bool,
    local_hosts: Vec<String>,
    lookup: Lookup,
}

impl CheckedResolver {
    /// The resolver of `config`, resolving names with the system resolver.
    pub(crate) fn new(config: &LlmConfig) -> Self {
        Self::with_lookup(config, Arc::new(system_lookup))
    }

    /// The resolver of `config`, resolving names with `lookup` (tests give
    /// a fake DNS here).
    pub(crate) fn with_lookup(config: &LlmConfig, lookup: Lookup) -> Self {
        CheckedResolver {
            strict: config.strict_sovereign,
            local_hosts: config.local_hosts.clone(),
            lookup,
        }
    }

    /// `true` when strict sovereignty would refuse to connect to `url`'s
    /// host (used to explain a redirect koas did not follow).
    pub(crate) fn refuses(&self, url: &Url) -> bool {
        self.strict && !url.host().is_some_and(|h| is_local(&h, &self.local_hosts))
    }

    /// The checked addresses of `netloc` (`host:port`, IPv6 in brackets,
    /// as the HTTP client writes it).
    pub(crate) fn resolve_checked(&self, netloc: &str) -> io::Result<Vec<SocketAddr>> {
        let (host, port) = split_netloc(netloc)?;
        if let Ok(ip) = host.parse::<IpAddr>() {
            if self.strict && !is_local_address(ip, &self.local_hosts) {
                return Err(refused(format!(
                    "{ip} is neither loopback nor listed in local_hosts; strict sovereignty \
                     refuses to connect to it ({OPT_OUT})"
                )));
            }
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let name = host.trim_end_matches('.');
        if name.eq_ignore_ascii_case("localhost") {
            // Answered here: `localhost.` would otherwise go to a DNS
            // server, whose answer nobody checked.
            return Ok(vec![
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port),
            ]);
        }
        if !self.strict {
            return (self.lookup)(netloc);
        }
        if !listed(&self.local_hosts, name) {
            return Err(refused(format!(
                "host {host} is neither loopback nor listed in local_hosts; strict sovereignty \
                 refuses to resolve or connect to it ({OPT_OUT})"
            )));
        }
        let addrs = (self.lookup)(netloc)?;
        if let Some(bad) = addrs
            .iter()
            .find(|a| !(is_local_address(a.ip(), &self.local_hosts) || is_private_address(a.ip())))
        {
            return Err(refused(format!(
                "{host} (listed in local_hosts) resolves to {}, which is neither loopback, nor on \
                 a private network, nor listed in local_hosts; strict sovereignty refuses to \
                 connect (list that address too if the machine is yours, or {OPT_OUT})",
                bad.ip()
            )));
        }
        Ok(addrs)
    }
}

impl ureq::Resolver for CheckedResolver {
    fn resolve(&self, netloc: &str) -> io::Result<Vec<SocketAddr>> {
        self.resolve_checked(netloc)
    }
}

fn refused(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, Refusal(message))
}

/// `host:port` → (`host` without IPv6 brackets, port).
fn split_netloc(netloc: &str) -> io::Result<(&str, u16)> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad address {netloc:?}"),
        )
    };
    let (host, port) = netloc.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse().map_err(|_| bad())?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(backend: BackendKind, endpoint: &str) -> LlmConfig {
        LlmConfig::new(backend, endpoint, "m")
    }

    #[test]
    fn one_remote_endpoint_among_local_ones_refuses_the_config_naming_it() {
        let mut c = LlmConfig::new(BackendKind::Openai, "http://127.0.0.1:1", "m");
        c.endpoint = None;
        c.endpoints = vec![
            crate::EndpointSpec::Url("http://127.0.0.1:1".into()),
            crate::EndpointSpec::Url("http://llm.example.com:8080".into()),
        ];
        let e = check_sovereignty(&c).unwrap_err().to_string();
        assert!(e.contains("http://llm.example.com:8080"), "{e}");
        c.strict_sovereign = false;
        assert!(check_sovereignty(&c).is_ok());
    }

    #[test]
    fn loopback_endpoints_pass() {
        for e in [
            "http://127.0.0.1:11434",
            "http://127.8.9.10",
            "http://localhost:8080/v1",
            "http://LOCALHOST.",
            "http://[::1]:8081",
            "http://[::ffff:127.0.0.1]:1",
        ] {
            assert!(
                check_sovereignty(&config(BackendKind::Openai, e)).is_ok(),
                "{e}"
            );
        }
    }

    #[test]
    fn remote_endpoints_and_anthropic_are_refused() {
        for e in [
            "http://10.0.0.5:11434",
            "https://example.com",
            "http://[2001:db8::1]",
            "http://128.0.0.1",
        ] {
            let err = check_sovereignty(&config(BackendKind::Ollama, e)).unwrap_err();
            assert_eq!(err.code(), "SOVEREIGNTY", "{e}");
        }
        let err =
            check_sovereignty(&config(BackendKind::Anthropic, "http://127.0.0.1:1")).unwrap_err();
        assert!(err.to_string().contains("no-strict-sovereign"));
    }

    #[test]
    fn allow_list_and_opt_out() {
        let mut c = config(BackendKind::Ollama, "http://gpu-box.lan:11434");
        assert!(check_sovereignty(&c).is_err());
        c.local_hosts = vec!["GPU-BOX.lan".into()];
        assert!(check_sovereignty(&c).is_ok());
        let mut c = config(BackendKind::Anthropic, "https://api.anthropic.com");
        c.strict_sovereign = false;
        assert!(check_sovereignty(&c).is_ok());
    }

    /// A fake DNS: answers `name:port` from `table`, counting lookups.
    fn fake_dns(
        table: &'static [(&'static str, &'static str)],
    ) -> (Lookup, Arc<std::sync::atomic::AtomicUsize>) {
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = count.clone();
        let lookup: Lookup = Arc::new(move |netloc: &str| {
            c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let (host, port) = split_netloc(netloc)?;
            let answers: Vec<SocketAddr> = table
                .iter()
                .filter(|(name, _)| name.eq_ignore_ascii_case(host.trim_end_matches('.')))
                .map(|(_, ip)| SocketAddr::new(ip.parse().expect("test ip"), port))
                .collect();
            if answers.is_empty() {
                Err(io::Error::new(io::ErrorKind::NotFound, "NXDOMAIN"))
            } else {
                Ok(answers)
            }
        });
        (lookup, count)
    }

    fn resolver(local_hosts: &[&str], lookup: Lookup) -> CheckedResolver {
        let mut c = config(BackendKind::Openai, "http://127.0.0.1:1");
        c.local_hosts = local_hosts.iter().map(|h| h.to_string()).collect();
        CheckedResolver::with_lookup(&c, lookup)
    }

    fn refusal(e: &io::Error) -> String {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<Refusal>())
            .map(|r| r.0.clone())
            .unwrap_or_else(|| panic!("not a refusal: {e}"))
    }

    #[test]
    fn localhost_with_or_without_a_trailing_dot_is_answered_without_a_lookup() {
        let (lookup, lookups) = fake_dns(&[("localhost", "203.0.113.9")]);
        let r = resolver(&[], lookup);
        for netloc in ["localhost:8080", "localhost.:8080", "LocalHost.:8080"] {
            let addrs = r.resolve_checked(netloc).expect(netloc);
            assert!(!addrs.is_empty());
            assert!(
                addrs
                    .iter()
                    .all(|a| is_loopback_address(a.ip()) && a.port() == 8080),
                "{netloc}: {addrs:?}"
            );
        }
        assert_eq!(lookups.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[test]
    fn a_listed_name_must_resolve_to_local_addresses() {
        let (lookup, _) = fake_dns(&[
            ("gpu-box.lan", "192.168.1.20"),
            ("lab.lan", "fd00::20"),
            ("rebound.lan", "203.0.113.7"),
            ("mixed.lan", "10.0.0.2"),
            ("mixed.lan", "203.0.113.7"),
            ("any.lan", "0.0.0.0"),
        ]);
        let r = resolver(
            &[
                "gpu-box.lan",
                "lab.lan",
                "rebound.lan",
                "mixed.lan",
                "any.lan",
            ],
            lookup.clone(),
        );
        assert_eq!(
            r.resolve_checked("gpu-box.lan:11434").expect("private"),
            vec!["192.168.1.20:11434".parse().expect("addr")]
        );
        assert!(r.resolve_checked("lab.lan.:1").is_ok(), "unique-local IPv6");
        for (netloc, bad) in [
            ("rebound.lan:11434", "203.0.113.7"),
            ("mixed.lan:11434", "203.0.113.7"),
            ("any.lan:11434", "0.0.0.0"),
        ] {
            let err = r.resolve_checked(netloc).expect_err(netloc);
            let text = refusal(&err);
            assert!(text.contains(bad) && text.contains("local_hosts"), "{text}");
        }
        // Listing the address too is the user's way to allow it.
        let r = resolver(&["rebound.lan", "203.0.113.7"], lookup);
        assert!(r.resolve_checked("rebound.lan:11434").is_ok());
    }

    #[test]
    fn an_unlisted_name_is_refused_before_any_lookup() {
        let (lookup, lookups) = fake_dns(&[("llm.example.com", "127.0.0.1")]);
        let r = resolver(&[], lookup);
        let err = r
            .resolve_checked("llm.example.com:80")
            .expect_err("refused");
        assert!(refusal(&err).contains("llm.example.com"));
        assert_eq!(lookups.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[test]
    fn addresses_in_the_url_are_checked_as_addresses() {
        let (lookup, lookups) = fake_dns(&[]);
        let r = resolver(&["10.0.0.5"], lookup);
        for ok in [
            "127.0.0.2:1",
            "[::1]:1",
            "[::ffff:127.0.0.1]:1",
            "10.0.0.5:1",
        ] {
            assert!(r.resolve_checked(ok).is_ok(), "{ok}");
        }
        for refused in ["0.0.0.0:1", "[::]:1", "192.168.1.1:1", "8.8.8.8:53"] {
            let err = r.resolve_checked(refused).expect_err(refused);
            assert!(refusal(&err).contains("strict sovereignty"), "{refused}");
        }
        assert_eq!(lookups.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[test]
    fn without_strict_sovereignty_names_resolve_unchecked() {
        let (lookup, _) = fake_dns(&[("llm.example.com", "203.0.113.7")]);
        let mut c = config(BackendKind::Openai, "http://llm.example.com");
        c.strict_sovereign = false;
        let r = CheckedResolver::with_lookup(&c, lookup);
        assert!(r.resolve_checked("llm.example.com:80").is_ok());
        assert!(r.resolve_checked("0.0.0.0:80").is_ok());
        assert!(!r.refuses(&Url::parse("http://0.0.0.0:1/").expect("url")));
    }

    #[test]
    fn address_classes() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        for private in [
            "10.1.2.3",
            "172.31.0.1",
            "192.168.0.1",
            "169.254.1.1",
            "fd12::1",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_private_address(ip(private)), "{private}");
        }
        for public in ["172.32.0.1", "8.8.8.8", "0.0.0.0", "2001:db8::1", "::"] {
            assert!(!is_private_address(ip(public)), "{public}");
            assert!(!is_loopback_address(ip(public)), "{public}");
        }
    }
}
