//! The WebAuthn relying party: this server as the site passkeys are bound to, from
//! `VELLUM_BASE_URL` (admin contract: the relying party id is its host).
//!
//! Browsers refuse WebAuthn on a bare IP address, so a loopback base URL (`http://127.0.0.1:8080`,
//! the default) becomes `http://localhost:8080`, the address the README tells people to open; any
//! other IP address leaves passkeys off (the routes say why).

use url::{Host, Url};
use webauthn_rs::{Webauthn, WebauthnBuilder};

/// The relying party's display name in the browser's prompt.
const RP_NAME: &str = "Vellum";

/// The relying party for `base_url`, or `None` when passkeys cannot work there (an unparsable
/// URL, or a host that is a non-loopback IP address).
#[must_use]
pub fn relying_party(base_url: &str) -> Option<Webauthn> {
    let mut origin = Url::parse(base_url).ok()?;
    origin.set_path("");
    let id = match origin.host()? {
        Host::Domain(domain) => domain.to_owned(),
        Host::Ipv4(ip) if ip.is_loopback() => "localhost".to_owned(),
        Host::Ipv6(ip) if ip.is_loopback() => "localhost".to_owned(),
        Host::Ipv4(_) | Host::Ipv6(_) => return None,
    };
    if id == "localhost" {
        origin.set_host(Some("localhost")).ok()?;
    }
    WebauthnBuilder::new(&id, &origin)
        .ok()?
        .rp_name(RP_NAME)
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_relying_party_is_the_base_urls_host_and_localhost_for_loopback() {
        for base in [
            "https://cms.example.com",
            "https://cms.example.com/",
            "http://localhost:8080",
            "http://127.0.0.1:8080",
            "http://[::1]:9000",
        ] {
            assert!(relying_party(base).is_some(), "{base}");
        }
        for base in ["http://10.0.0.5:8080", "not a url", "http://192.168.1.2"] {
            assert!(relying_party(base).is_none(), "{base}");
        }
    }
}
