//! Vellum's image handling: probing uploaded images and producing transform variants.
//!
//! Planned (issue 8): sniff the format from the bytes, check dimension and size limits before
//! decoding, and render the presets of the operator contract (`thumbnail`, `small`, `medium`,
//! `large`, `size-N`) without ever upscaling, with deterministic variant keys so a repeated request
//! does no resize work.
//!
//! This crate must never know about HTTP, the database, access rules or where blobs are stored: it
//! turns bytes and a transform request into bytes, and nothing else.
