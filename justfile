# Local shortcuts. `.ci/run` is the source of truth and CI never needs `just`: each recipe here
# runs the matching step of that script, so the two cannot drift apart.

# Every CI step, exactly as CI runs them.
ci:
    .ci/run

# vellum-domain and vellum-policy depend on none of sea-orm, actix-web, tokio.
layering:
    .ci/run layering

# `cargo fmt --all --check` (run `cargo fmt --all` to fix).
fmt:
    .ci/run fmt

# `cargo clippy --workspace --all-targets -- -D warnings`.
clippy:
    .ci/run clippy

# The README's test command, with local PostgreSQL / Redis when they answer and moto for S3.
test:
    .ci/run services test

# The reduced transform soak (issue 27) and resource soak (issue 28) against the debug server
# (bench/README.md).
soak:
    .ci/run soak

# `cargo deny check`, when cargo-deny is installed.
deny:
    .ci/run deny

# Run the server on the embedded SQLite default, with the demo data.
run:
    cargo run --release -p vellum-server -- --demo

# Storage benchmark (list with a two-field filter, show by id) on a fresh SQLite file; pass
# `--database-url postgres://…` for PostgreSQL. See bench/README.md.
bench-storage *ARGS:
    cargo run --release -p vellum-bench --bin vellum-bench-storage -- {{ARGS}}

# Schemathesis against the served OpenAPI description (uses the debug server `just test` built).
schemathesis:
    .ci/run schemathesis

# The web UI's browser suite (Playwright + Debian's Chromium) against the debug server; with
# VELLUM_SCREENSHOTS=1 it also rewrites docs/screenshots/.
browser:
    .ci/run browser

# The realtime suite (unmodified pusher-js and laravel-echo from npm, tests/realtime) against the
# debug server; with local Redis, two replicas too.
realtime:
    .ci/run services realtime

# The HTTP benchmark of docs/benchmarks.md (release build, about 3 minutes at 10 s per scenario).
bench-http SECONDS="10":
    bench/run.sh {{SECONDS}}
