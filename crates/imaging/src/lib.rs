//! Vellum's image handling: probing uploaded files and producing transform variants.
//!
//! [`probe`] sniffs the format from the bytes and reads image dimensions from the header alone.
//! Transforms (planned: issue 8) render the presets of the operator contract (`thumbnail`,
//! `small`, `medium`, `large`, `size-N`) without ever upscaling, with limits checked before
//! decoding.
//!
//! This crate must never know about HTTP, the database, access rules or where blobs are stored: it
//! turns bytes and a transform request into bytes, and nothing else.

mod probe;

pub use probe::{PROBE_BYTES, Probe, probe};
