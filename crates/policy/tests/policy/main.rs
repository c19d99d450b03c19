//! The policy crate's property and fuzz tests.
//!
//! One test binary for the crate (one link, one process), a module per subject.

mod fuzz_client_addr;
mod fuzz_filter;
mod fuzz_origin;
mod properties;
