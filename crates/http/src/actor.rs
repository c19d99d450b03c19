//! Who a request acts as, resolved once per request by [`resolve_actor`] (a middleware on
//! `/api/v1`) in the spec's order: origin gate, API key, the key's IP allowlist. Handlers take an
//! [`Actor`] argument; role grants are checked per operation.

use std::borrow::Cow;
use std::future::{Ready, ready};
use std::sync::Arc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage, HttpRequest, ResponseError, web};
use ipnet::IpNet;
use time::OffsetDateTime;
use vellum_policy::{Authenticated, ClientAddr, RequestFacts, Role, authenticate, client_addr};

use crate::error::ApiError;
use crate::state::{AppState, Snapshot};

/// The acting role and the project snapshot the request was authorized against.
#[derive(Debug, Clone)]
pub struct Actor {
    pub role: Arc<Role>,
    /// The user behind the request, for `user_created_id`; API keys act for no user.
    pub user_id: Option<i64>,
    pub snapshot: Arc<Snapshot>,
}

impl FromRequest for Actor {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        ready(req.extensions().get::<Self>().cloned().ok_or_else(|| {
            ApiError::Internal("the actor middleware is not installed on this route".into())
        }))
    }
}

/// The middleware: authenticates the request and stores its [`Actor`], or answers 401/403.
pub async fn resolve_actor(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        let err = ApiError::Internal("the application state is missing".into());
        return Ok(req.into_response(err.error_response()));
    };
    match authenticate_request(&state, req.request()).await {
        Ok(actor) => {
            req.extensions_mut().insert(actor);
            next.call(req)
                .await
                .map(ServiceResponse::map_into_boxed_body)
        }
        Err(err) => Ok(req.into_response(err.error_response())),
    }
}

async fn authenticate_request(state: &AppState, req: &HttpRequest) -> Result<Actor, ApiError> {
    let snapshot = state.snapshot().await?;
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .map(|v| v.to_str().unwrap_or("\u{fffd}"));
    let bearer = bearer_token(req);
    let facts = RequestFacts {
        origin,
        bearer,
        client: client_ip(req, &state.config().trusted_proxies),
        now: OffsetDateTime::now_utc(),
    };
    let found = match facts.key_id() {
        Some(key_id) => snapshot.find_key(state.db(), &key_id).await?,
        None => None,
    };
    let authenticated = authenticate(
        &snapshot.origins,
        &facts,
        found.as_deref().map(|f| &f.record),
    )
    .map_err(ApiError::Rejected)?;
    let role = match authenticated {
        Authenticated::Anonymous => snapshot.role("public"),
        Authenticated::Key(record) => {
            if let Some(found) = &found
                && state.touch_due(found.id)
            {
                touch(state.clone(), found.id);
            }
            snapshot.role(&record.role)
        }
    };
    Ok(Actor {
        role,
        user_id: None,
        snapshot,
    })
}

/// Records the key's use in the background: the request does not wait for a write.
fn touch(state: AppState, id: i64) {
    actix_web::rt::spawn(async move {
        let at = OffsetDateTime::now_utc();
        if let Err(err) = vellum_storage::keys::touch_api_key(state.db(), id, at).await {
            tracing::warn!(error = %crate::error::error_chain(&err), key = id, "could not record key use");
        }
    });
}

/// The token of `Authorization: Bearer <token>` (scheme case-insensitive). Any other
/// `Authorization` header counts as a presented but invalid key, so it never falls back to
/// `public`.
fn bearer_token(req: &HttpRequest) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?;
    let Ok(text) = value.to_str() else {
        return Some("");
    };
    let text = text.trim();
    match text.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => Some(token.trim()),
        _ => Some(""),
    }
}

/// The client address: the peer, or, when the peer is a trusted proxy, what its
/// `X-Forwarded-For` says. The rule lives in [`vellum_policy::client_addr`]; this only gathers
/// its inputs. A connection without a peer address (a Unix socket) is an unknown client, which
/// only a key without an IP allowlist accepts. `Forwarded` and `X-Real-IP` are not read.
#[must_use]
pub fn client_ip(req: &HttpRequest, trusted: &[IpNet]) -> ClientAddr {
    let Some(peer) = req.peer_addr() else {
        return ClientAddr::Unknown;
    };
    // Every line, even one that is not visible ASCII: dropping such a line would also drop the
    // entry a proxy appended to it, and let an entry to its left, written by the client, count.
    let lines: Vec<Cow<'_, str>> = req
        .headers()
        .get_all("x-forwarded-for")
        .map(|v| String::from_utf8_lossy(v.as_bytes()))
        .collect();
    client_addr(peer.ip(), trusted, lines.iter().map(AsRef::as_ref))
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn forwarded_addresses_count_only_behind_a_trusted_proxy() {
        let proxy: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let known = |ip: &str| ClientAddr::Known(ip.parse().unwrap());
        let direct = TestRequest::default()
            .peer_addr("203.0.113.9:5000".parse().unwrap())
            .insert_header(("x-forwarded-for", "1.2.3.4"))
            .to_http_request();
        assert_eq!(client_ip(&direct, &proxy), known("203.0.113.9"));

        let proxied = TestRequest::default()
            .peer_addr("10.0.0.2:5000".parse().unwrap())
            .insert_header(("x-forwarded-for", "6.6.6.6, 1.2.3.4, 10.0.0.7"))
            .to_http_request();
        assert_eq!(client_ip(&proxied, &proxy), known("1.2.3.4"));

        let no_header = TestRequest::default()
            .peer_addr("10.0.0.2:5000".parse().unwrap())
            .to_http_request();
        assert_eq!(client_ip(&no_header, &proxy), known("10.0.0.2"));
        assert_eq!(client_ip(&no_header, &[]), known("10.0.0.2"));

        // No peer address at all: unknown, as before (only an empty allowlist accepts it).
        let no_peer = TestRequest::default().to_http_request();
        assert_eq!(client_ip(&no_peer, &proxy), ClientAddr::Unknown);
    }

    #[test]
    fn every_forwarded_line_counts_in_order_even_when_not_ascii() {
        let proxy: Vec<IpNet> = vec!["10.0.0.0/8".parse().unwrap()];
        let with_lines = |lines: &[&[u8]]| {
            let mut req = TestRequest::default().peer_addr("10.0.0.2:5000".parse().unwrap());
            for line in lines {
                let value = header::HeaderValue::from_bytes(line).unwrap();
                req = req.append_header(("x-forwarded-for", value));
            }
            client_ip(&req.to_http_request(), &proxy)
        };
        let known = |ip: &str| ClientAddr::Known(ip.parse().unwrap());
        assert_eq!(with_lines(&[b"9.9.9.9", b"1.2.3.4:80"]), known("1.2.3.4"));
        // A proxy that appends to the last line: the client's bad bytes must not take the
        // proxy's entry down with them.
        assert_eq!(
            with_lines(&[b"10.1.2.3", b"\xff, 8.8.8.8"]),
            known("8.8.8.8")
        );
        assert_eq!(
            with_lines(&[b"10.1.2.3", b"8.8.8.8 \xff"]),
            ClientAddr::Unknown
        );
        assert_eq!(with_lines(&[b"10.1.2.3", b"unknown"]), ClientAddr::Unknown);
    }

    #[test]
    fn bearer_tokens_and_other_schemes() {
        let req = |v: &str| {
            TestRequest::default()
                .insert_header((header::AUTHORIZATION, v.to_owned()))
                .to_http_request()
        };
        assert_eq!(bearer_token(&req("Bearer ek_abc")), Some("ek_abc"));
        assert_eq!(bearer_token(&req("bearer  ek_abc ")), Some("ek_abc"));
        assert_eq!(bearer_token(&req("Basic dXNlcg==")), Some(""));
        assert_eq!(
            bearer_token(&TestRequest::default().to_http_request()),
            None
        );
    }
}
