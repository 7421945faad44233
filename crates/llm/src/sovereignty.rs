//! Strict sovereignty: only local endpoints and local backends.
//!
//! Under `strict_sovereign = true` (the default) the service refuses:
//!
//! * the Anthropic backend (a remote API by design);
//! * an endpoint whose host is not loopback — `127.0.0.0/8`, `::1`
//!   (also as `::ffff:127.x.y.z`) or the name `localhost` — and is not
//!   listed in `local_hosts`.
//!
//! The user opts out with `--no-strict-sovereign` or
//! `strict_sovereign = false`.

use crate::config::{BackendKind, LlmConfig};
use crate::error::LlmError;
use std::net::IpAddr;
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
    let endpoint = config.endpoint();
    let url = Url::parse(&endpoint)
        .map_err(|e| LlmError::Config(format!("endpoint {endpoint:?}: {e}")))?;
    let host = url
        .host()
        .ok_or_else(|| LlmError::Config(format!("endpoint {endpoint:?} has no host")))?;
    if is_local(&host, &config.local_hosts) {
        Ok(())
    } else {
        Err(LlmError::Sovereignty(format!(
            "endpoint {endpoint} is not on this machine (host {host} is neither loopback nor \
             listed in local_hosts); strict sovereignty refuses it (use --no-strict-sovereign, \
             strict_sovereign = false, or add the host to local_hosts)"
        )))
    }
}

/// `true` when `host` is loopback or declared local.
pub fn is_local(host: &Host<&str>, local_hosts: &[String]) -> bool {
    let listed = |name: &str| {
        local_hosts
            .iter()
            .any(|h| h.trim().trim_matches(['[', ']']).eq_ignore_ascii_case(name))
    };
    match host {
        Host::Domain(name) => {
            let name = name.trim_end_matches('.');
            name.eq_ignore_ascii_case("localhost") || listed(name)
        }
        Host::Ipv4(ip) => ip.is_loopback() || listed(&ip.to_string()),
        Host::Ipv6(ip) => {
            let mapped_loopback = ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback());
            IpAddr::V6(*ip).is_loopback() || mapped_loopback || listed(&ip.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(backend: BackendKind, endpoint: &str) -> LlmConfig {
        LlmConfig::new(backend, endpoint, "m")
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
}
