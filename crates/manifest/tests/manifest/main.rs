//! The manifest crate's apply tests and its fuzzing.
//!
//! One test binary for the crate (one link, one process), a module per subject.

mod apply;
mod fuzz_manifest;
