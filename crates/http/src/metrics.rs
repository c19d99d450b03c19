//! Prometheus metrics at the edge: [`record`] counts every request of the public app by method,
//! route pattern and status, and [`app`] is the separate listener's whole application, `GET
//! /metrics` and nothing else ([`serve`] runs it). The registry and what else it holds live in
//! [`vellum_app::metrics`].
//!
//! The metrics are off unless `vellum-server` is given `VELLUM_METRICS_ADDR`: then
//! `HttpConfig::metrics` is set and [`record`] counts; otherwise it only passes requests on.
//! `/metrics` is never a route of [`crate::app`], so the public listener answers it 404 and an
//! operator decides who can reach the metrics by where the second listener binds.

use std::borrow::Cow;
use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{App, HttpResponse, HttpServer, web};
use vellum_app::AppState;
use vellum_app::metrics::{CONTENT_TYPE, UNMATCHED, method_label};

/// Counts the request in `vellum_http_requests_total` and its time to the response head in
/// `vellum_http_request_duration_seconds`, under its route's pattern (`match_pattern`): the
/// path would make a series per item id. An error the middleware chain returns instead of a
/// response (a timed-out handler's 503 or 408) is counted with the status it becomes, which is
/// why the pattern is found before the call: the request is gone with the error.
pub async fn record(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let state = match req.app_data::<web::Data<AppState>>() {
        Some(state) if state.config().metrics => state.clone(),
        _ => {
            return next
                .call(req)
                .await
                .map(ServiceResponse::map_into_boxed_body);
        }
    };
    let started = Instant::now();
    let method = method_label(req.method().as_str());
    let route = req
        .match_pattern()
        .map_or(Cow::Borrowed(UNMATCHED), Cow::Owned);
    let result = next.call(req).await;
    let status = match &result {
        Ok(res) => res.status(),
        Err(err) => err.as_response_error().status_code(),
    };
    state
        .metrics()
        .observe_request(method, route, status.as_u16(), started.elapsed());
    result.map(ServiceResponse::map_into_boxed_body)
}

/// The metrics listener's application: `GET /metrics` in the Prometheus text format, 404 for
/// anything else.
pub fn app(
    state: AppState,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(web::Data::new(state))
        .route("/metrics", web::get().to(scrape))
        .default_service(web::to(crate::not_found))
}

/// Every registered metric, the pool, socket and job gauges read now.
async fn scrape(state: web::Data<AppState>) -> HttpResponse {
    match state.render_metrics().await {
        Ok(text) => HttpResponse::Ok()
            .insert_header((header::CONTENT_TYPE, CONTENT_TYPE))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .body(text),
        Err(err) => {
            tracing::error!(error = %err, "could not encode the metrics");
            HttpResponse::InternalServerError().finish()
        }
    }
}

/// Serves [`app`] on `listener` with one worker (a scrape every few seconds needs no more) until
/// stopped through the returned server's handle; it does not watch signals: the caller stops it
/// when the public server stops.
///
/// # Errors
/// When the listener cannot be registered.
pub fn serve(
    state: AppState,
    listener: std::net::TcpListener,
) -> std::io::Result<actix_web::dev::Server> {
    Ok(HttpServer::new(move || app(state.clone()))
        .workers(1)
        .disable_signals()
        .shutdown_timeout(1)
        .listen(listener)?
        .run())
}
