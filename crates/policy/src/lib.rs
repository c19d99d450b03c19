//! Vellum's access model: every "may this actor do that?" decision, in one embeddable place.
//!
//! The crate will hold grants per collection and action, field rules, item filters (a filter AST that
//! storage compiles to SQL and that can also be evaluated in memory), file visibility, the origin
//! gate and API-key checks (planned: issue 4). It returns data, never side effects: a decision with
//! its reason, a redaction plan, a filter. Write paths in `vellum-storage` will only accept a
//! capability value (such as `Authorized<WriteItem>`) that this crate alone can construct, so a
//! handler cannot forget the check.
//!
//! This crate must never perform I/O, be `async`, or depend on a framework: no sea-orm, actix-web,
//! tokio or reqwest (`.ci/run` proves it with `cargo tree`). It may depend only on `vellum-domain`
//! and pure libraries.
