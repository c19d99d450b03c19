//! Vellum's HTTP edge: the actix-web app, its extractors, middleware and error envelopes.
//!
//! Planned (issue 7): one app builder, `vellum_http::app(state)`, used by `vellum-server` and by
//! every test; a middleware that resolves the request's `Actor` once (origin gate, API key, role);
//! thin handlers that call one service each; and the single `ApiError` that maps every lower-layer
//! error, with an exhaustive `match`, to a status code and the contract's JSON envelope.
//!
//! This is the only crate that knows HTTP status codes. It must never decide access itself (that is
//! `vellum-policy`), build SQL (that is `vellum-storage`), or normalize values (that is
//! `vellum-domain`); 5xx bodies never carry internal details.
