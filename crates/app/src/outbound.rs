//! Outbound webhook requests, and the guard that keeps them off the server's own network (SSRF).
//!
//! A webhook URL is an editor-supplied address the server will call: pointed at `127.0.0.1`,
//! a cloud metadata endpoint (`169.254.169.254`) or an internal service, it would let an admin
//! reach what only the server can. So every address a request would connect to is checked: a
//! literal IP in the URL before the request, a host name in the client's own DNS resolver (so the
//! address checked is the address connected to: a name that resolves to a public address for
//! the check and a private one for the connection cannot slip through). Loopback, private,
//! link-local, carrier-grade NAT, unique-local, multicast, unspecified and documentation ranges
//! are refused unless the operator lists them in `VELLUM_WEBHOOK_ALLOWED_NETWORKS`. Redirects
//! are not followed (a public receiver could redirect to a private one), proxies from the
//! environment are not used, the whole request has a timeout, and the response body is never
//! read: only its status counts.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::Url;

/// Address ranges a webhook may not reach unless allowed.
const BLOCKED: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/3",
    "::/128",
    "::1/128",
    "64:ff9b::/96",
    "100::/64",
    "2001:db8::/32",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
];

/// Which addresses webhooks may reach.
#[derive(Debug, Clone)]
pub struct AddressGuard {
    blocked: Vec<IpNet>,
    allowed: Vec<IpNet>,
}

impl AddressGuard {
    /// The guard with the operator's `allowed` ranges let through.
    #[must_use]
    pub fn new(allowed: Vec<IpNet>) -> Self {
        let blocked = BLOCKED.iter().filter_map(|net| net.parse().ok()).collect();
        Self { blocked, allowed }
    }

    /// Whether a request may connect to `ip` (an IPv4-mapped IPv6 address counts as its IPv4).
    #[must_use]
    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 @ IpAddr::V4(_) => v4,
        };
        self.allowed.iter().any(|net| net.contains(&ip))
            || !self.blocked.iter().any(|net| net.contains(&ip))
    }
}

/// Why a URL is not a webhook URL (checked when a webhook is saved).
///
/// # Errors
/// The message for the `url` field.
pub fn check_url(url: &str, guard: &AddressGuard) -> Result<Url, &'static str> {
    let parsed = Url::parse(url).map_err(|_| "The url must be an absolute http or https URL.")?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("The url must be an absolute http or https URL.");
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("The url must not carry credentials.");
    }
    match parsed.host() {
        None => Err("The url must name a host."),
        Some(url::Host::Ipv4(ip)) if !guard.permits(IpAddr::V4(ip)) => {
            Err("The url points at a private or reserved address.")
        }
        Some(url::Host::Ipv6(ip)) if !guard.permits(IpAddr::V6(ip)) => {
            Err("The url points at a private or reserved address.")
        }
        Some(_) => Ok(parsed),
    }
}

/// The DNS resolver of the webhook client: the system's, with refused addresses dropped; a
/// name with no permitted address fails to resolve.
#[derive(Debug)]
struct GuardedResolver(Arc<AddressGuard>);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = Arc::clone(&self.0);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let permitted: Vec<SocketAddr> = found
                .into_iter()
                .filter(|addr| guard.permits(addr.ip()))
                .collect();
            if permitted.is_empty() {
                return Err(format!("{host} resolves to no permitted address").into());
            }
            let addrs: Addrs = Box::new(permitted.into_iter());
            Ok(addrs)
        })
    }
}

/// The client every delivery of this process goes through.
#[derive(Debug, Clone)]
pub struct Outbound {
    client: reqwest::Client,
    guard: Arc<AddressGuard>,
}

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status, when the receiver answered.
    pub status: Option<u16>,
    pub duration: Duration,
    /// Why it failed (not a 2xx, or no answer); `None` when delivered.
    pub error: Option<String>,
}

impl Response {
    #[must_use]
    pub fn delivered(&self) -> bool {
        self.error.is_none()
    }
}

/// One signed message.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    pub url: &'a str,
    pub id: &'a str,
    pub timestamp: i64,
    pub signature: &'a str,
    pub body: &'a str,
}

impl Outbound {
    /// A client with `timeout` per request that reaches only what `guard` permits.
    ///
    /// # Errors
    /// When the TLS backend cannot start.
    pub fn new(guard: AddressGuard, timeout: Duration) -> Result<Self, reqwest::Error> {
        let guard = Arc::new(guard);
        let client = reqwest::Client::builder()
            .dns_resolver(GuardedResolver(Arc::clone(&guard)))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .user_agent(concat!("Vellum-Webhooks/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client, guard })
    }

    #[must_use]
    pub fn guard(&self) -> &AddressGuard {
        &self.guard
    }

    /// POSTs `message`; a 2xx is delivered, anything else failed. The response body is not read.
    pub async fn send(&self, message: Message<'_>) -> Response {
        let started = Instant::now();
        if let Err(error) = check_url(message.url, &self.guard) {
            return Response {
                status: None,
                duration: started.elapsed(),
                error: Some(error.to_owned()),
            };
        }
        let sent = self
            .client
            .post(message.url)
            .header("content-type", "application/json")
            .header("webhook-id", message.id)
            .header("webhook-timestamp", message.timestamp.to_string())
            .header("webhook-signature", message.signature)
            .body(message.body.to_owned())
            .send()
            .await;
        let duration = started.elapsed();
        match sent {
            Ok(response) if response.status().is_success() => Response {
                status: Some(response.status().as_u16()),
                duration,
                error: None,
            },
            Ok(response) => Response {
                status: Some(response.status().as_u16()),
                duration,
                error: Some(format!(
                    "the receiver answered {}",
                    response.status().as_u16()
                )),
            },
            Err(err) => Response {
                status: None,
                duration,
                error: Some(describe(&err)),
            },
        }
    }
}

/// A short, secret-free description of a failed request (never the URL's query).
fn describe(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        "the request timed out".to_owned()
    } else if err.is_connect() {
        let mut source: Option<&dyn std::error::Error> = std::error::Error::source(err);
        while let Some(inner) = source {
            if inner.to_string().contains("no permitted address") {
                return "the host resolves to no permitted address".to_owned();
            }
            source = inner.source();
        }
        "the receiver could not be reached".to_owned()
    } else {
        "the request failed".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> AddressGuard {
        AddressGuard::new(Vec::new())
    }

    #[test]
    fn private_loopback_and_metadata_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.20.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!guard().permits(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "8.8.8.8"] {
            assert!(guard().permits(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn the_operator_can_allow_a_range() {
        let allowed = AddressGuard::new(vec!["127.0.0.0/8".parse().unwrap()]);
        assert!(allowed.permits("127.0.0.1".parse().unwrap()));
        assert!(!allowed.permits("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn urls_are_checked_for_scheme_credentials_and_literal_addresses() {
        let g = guard();
        assert!(check_url("https://hooks.example.com/x?y=1", &g).is_ok());
        assert!(check_url("ftp://example.com/", &g).is_err());
        assert!(check_url("https://user:pw@example.com/", &g).is_err());
        assert!(check_url("http://127.0.0.1:9000/", &g).is_err());
        assert!(check_url("http://[::1]/", &g).is_err());
        assert!(check_url("not a url", &g).is_err());
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_when_sending() {
        let outbound = Outbound::new(guard(), Duration::from_secs(2)).unwrap();
        let response = outbound
            .send(Message {
                url: "http://localhost:9/",
                id: "msg_1",
                timestamp: 1,
                signature: "v1,x",
                body: "{}",
            })
            .await;
        assert!(!response.delivered());
        assert_eq!(response.status, None);
        assert_eq!(
            response.error.as_deref(),
            Some("the host resolves to no permitted address")
        );
    }
}
