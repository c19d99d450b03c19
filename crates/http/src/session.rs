//! The admin app's edge: the session cookie, resolving it to a [`Principal`] once per request,
//! cross-site request protection, and the JSON-or-HTML answer to a missing session.
//!
//! [`admin_session`] wraps every admin route. In order it
//! 1. refuses a state-changing request that carries a session cookie and comes from another
//!    site (admin contract: `Sec-Fetch-Site`, else `Origin` against `VELLUM_BASE_URL`'s origin;
//!    requests with neither header, such as scripts, pass);
//! 2. resolves the cookie to a [`Principal`] ([`vellum_app::accounts::authenticate`]) and stores
//!    it for the [`SignedIn`] extractor;
//! 3. turns a 401 for a browser (an `Accept` that does not prefer JSON) into 303 to `/login`,
//!    and any other error for a client that names `text/html` into the error page.

use std::future::{Ready, ready};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::{Method, StatusCode, header};
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage, HttpRequest, HttpResponse, ResponseError, web};
use vellum_app::accounts::Client;
use vellum_app::identity::token::SessionToken;
use vellum_app::{AppState, Principal};
use vellum_policy::ClientAddr;

use crate::actor::client_ip;
use crate::error::ApiError;

/// The session cookie's name (admin contract).
pub const SESSION_COOKIE: &str = "vellum_session";

/// What the admin edge derives once from the configuration.
#[derive(Debug, Clone)]
pub struct AdminEdge {
    /// The origin of `VELLUM_BASE_URL` (`https://cms.example.com`), compared with `Origin`.
    pub origin: String,
    /// Whether the cookie carries `Secure` (`VELLUM_BASE_URL` is https).
    pub secure: bool,
    /// Seconds the cookie lives in the browser: the session's absolute lifetime.
    pub max_age: u64,
}

impl AdminEdge {
    #[must_use]
    pub fn new(state: &AppState) -> Self {
        let base = url::Url::parse(&state.config().base_url).ok();
        Self {
            origin: base
                .as_ref()
                .map(|u| u.origin().ascii_serialization())
                .unwrap_or_default(),
            secure: base.is_some_and(|u| u.scheme() == "https"),
            max_age: state.config().identity.session_lifetime.as_secs(),
        }
    }

    /// The `Set-Cookie` value that starts a session.
    #[must_use]
    pub fn cookie(&self, token: &SessionToken) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{SESSION_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
            token.expose(),
            self.max_age
        )
    }

    /// The `Set-Cookie` value that removes it.
    #[must_use]
    pub fn cleared_cookie(&self) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}")
    }
}

/// The value of the session cookie, if the request has one (the last, if several).
#[must_use]
pub fn session_cookie(req: &HttpRequest) -> Option<String> {
    let mut found = None;
    for value in req.headers().get_all(header::COOKIE) {
        let Ok(text) = value.to_str() else { continue };
        for pair in text.split(';') {
            if let Some((name, value)) = pair.trim().split_once('=')
                && name.trim() == SESSION_COOKIE
            {
                found = Some(value.trim().trim_matches('"').to_owned());
            }
        }
    }
    found
}

/// Whether a state-changing request carrying a session came from another site.
fn cross_site(req: &HttpRequest, edge: &AdminEdge) -> bool {
    let changes_state = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    if !changes_state || session_cookie(req).is_none() {
        return false;
    }
    if let Some(site) = req.headers().get("sec-fetch-site") {
        return !matches!(site.as_bytes(), b"same-origin" | b"none");
    }
    match req.headers().get(header::ORIGIN) {
        Some(origin) => origin.as_bytes() != edge.origin.as_bytes(),
        None => false,
    }
}

/// Whether the client prefers JSON to HTML (`Accept`): an explicit `application/json` at least
/// as preferred as `text/html`.
#[must_use]
pub fn wants_json(req: &HttpRequest) -> bool {
    let Some(accept) = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let (mut json, mut html) = (None::<f32>, None::<f32>);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "application/json" => json = Some(json.map_or(q, |j| j.max(q))),
            "text/html" => html = Some(html.map_or(q, |h| h.max(q))),
            _ => {}
        }
    }
    match (json, html) {
        (Some(j), Some(h)) => j > 0.0 && j >= h,
        (Some(j), None) => j > 0.0,
        _ => false,
    }
}

/// The middleware around every admin route (see the module documentation).
pub async fn admin_session(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let (Some(state), Some(edge)) = (
        req.app_data::<web::Data<AppState>>().cloned(),
        req.app_data::<web::Data<AdminEdge>>().cloned(),
    ) else {
        let err = ApiError::Internal("the application state is missing".into());
        return Ok(req.into_response(err.error_response()));
    };
    // The channel authorization endpoint answers its socket client (pusher-js sends `*/*`),
    // never a page or a redirect.
    let json = wants_json(req.request()) || req.path() == "/broadcasting/auth";
    let browser = !json && accepts_html(req.request());
    if cross_site(req.request(), &edge) {
        let res = req.into_response(ApiError::CrossSite.error_response());
        return Ok(if browser {
            crate::html::error_page(res).await
        } else {
            res
        });
    }
    if let Some(token) = session_cookie(req.request()).and_then(|v| SessionToken::from_cookie(&v)) {
        match vellum_app::accounts::authenticate(&state, &token).await {
            Ok(Some(principal)) => {
                req.extensions_mut().insert(principal);
            }
            Ok(None) => {}
            Err(err) => return Ok(req.into_response(ApiError::from(err).error_response())),
        }
    }
    let res = next.call(req).await?.map_into_boxed_body();
    if res.status() == StatusCode::UNAUTHORIZED && !json {
        let (req, _) = res.into_parts();
        let redirect = HttpResponse::SeeOther()
            .insert_header((header::LOCATION, "/login"))
            .finish();
        return Ok(ServiceResponse::new(req, redirect));
    }
    if browser {
        Ok(crate::html::error_page(res).await)
    } else {
        Ok(res)
    }
}

/// Whether the client names `text/html` in `Accept` (a browser): only then does an error become
/// an error page. A client with no `Accept`, or `*/*` (curl, scripts), keeps the JSON envelope.
fn accepts_html(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| {
            accept.split(',').any(|range| {
                range
                    .split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/html"))
            })
        })
}

/// The signed-in user of an admin request; 401 without a valid session.
#[derive(Debug, Clone)]
pub struct SignedIn(pub Principal);

impl FromRequest for SignedIn {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            req.extensions()
                .get::<Principal>()
                .cloned()
                .map(SignedIn)
                .ok_or(ApiError::Unauthenticated),
        )
    }
}

/// Where a sign-in comes from: the client address (behind trusted proxies), its user agent and
/// the session cookie it already carries.
#[must_use]
pub fn client(req: &HttpRequest, state: &AppState) -> Client {
    let ip = match client_ip(req, &state.config().trusted_proxies) {
        ClientAddr::Known(ip) => Some(ip.to_string()),
        ClientAddr::Unknown => None,
    };
    Client {
        ip,
        user_agent: req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        previous_session: session_cookie(req).and_then(|v| SessionToken::from_cookie(&v)),
    }
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    fn edge() -> AdminEdge {
        AdminEdge {
            origin: "https://cms.example.com".to_owned(),
            secure: true,
            max_age: 60,
        }
    }

    #[test]
    fn cross_site_rules_of_the_contract() {
        let cookie = (header::COOKIE, "a=b; vellum_session=x");
        type Row<'a> = (&'a str, Option<&'a str>, Option<&'a str>, bool, bool);
        let rows: &[Row<'_>] = &[
            // method, Sec-Fetch-Site, Origin, with cookie, refused
            ("POST", Some("cross-site"), None, true, true),
            ("POST", Some("same-site"), None, true, true),
            (
                "DELETE",
                Some("same-origin"),
                Some("https://evil.example"),
                true,
                false,
            ),
            ("PUT", Some("none"), None, true, false),
            ("POST", None, Some("https://evil.example"), true, true),
            ("PATCH", None, Some("https://cms.example.com"), true, false),
            ("POST", None, Some("null"), true, true),
            ("POST", None, None, true, false),
            ("POST", Some("cross-site"), None, false, false),
            (
                "GET",
                Some("cross-site"),
                Some("https://evil.example"),
                true,
                false,
            ),
        ];
        for (method, site, origin, with_cookie, refused) in rows {
            let mut req =
                TestRequest::default().method(Method::from_bytes(method.as_bytes()).unwrap());
            if *with_cookie {
                req = req.insert_header(cookie.clone());
            }
            if let Some(site) = site {
                req = req.insert_header(("sec-fetch-site", *site));
            }
            if let Some(origin) = origin {
                req = req.insert_header((header::ORIGIN, *origin));
            }
            assert_eq!(
                cross_site(&req.to_http_request(), &edge()),
                *refused,
                "{method} {site:?} {origin:?} {with_cookie}"
            );
        }
    }

    #[test]
    fn accept_negotiation() {
        let accept = |v: &str| {
            TestRequest::default()
                .insert_header((header::ACCEPT, v))
                .to_http_request()
        };
        assert!(wants_json(&accept("application/json")));
        assert!(wants_json(&accept("application/json, text/html")));
        assert!(wants_json(&accept("text/html;q=0.5, application/json")));
        assert!(!wants_json(&accept(
            "text/html,application/xhtml+xml,*/*;q=0.8"
        )));
        assert!(!wants_json(&accept("*/*")));
        assert!(!wants_json(&accept("application/json;q=0")));
        assert!(!wants_json(&TestRequest::default().to_http_request()));
    }

    #[test]
    fn cookies() {
        let req = TestRequest::default()
            .insert_header((header::COOKIE, "theme=dark; vellum_session=abc ; x=y"))
            .to_http_request();
        assert_eq!(session_cookie(&req).as_deref(), Some("abc"));
        let token = SessionToken::generate().unwrap();
        let set = edge().cookie(&token);
        assert!(set.starts_with(&format!(
            "vellum_session={}; Path=/; HttpOnly; SameSite=Lax; Max-Age=60",
            token.expose()
        )));
        assert!(set.ends_with("; Secure"));
        assert!(edge().cleared_cookie().contains("Max-Age=0"));
    }
}
