//! Vellum's image handling: probing uploaded files and producing transform variants.
//!
//! [`probe`] sniffs the format from the bytes and reads image dimensions from the header alone.
//! [`transform`] renders the presets of the operator contract ([`Preset`]: `thumbnail`, `small`,
//! `medium`, `large`, `size-N`) in the source's format, without ever upscaling, with the pixel
//! limit checked from the header before decoding (see the `transform` module for the pipeline).
//! [`estimate`] states a transform's peak memory and work before it runs, for the caller's
//! budget; what a decoder would spend beyond the pixels (progressive scans, a PNG's `iCCP`
//! profile, a GIF canvas larger than its frame, a lossless WebP's Huffman groups, an over-long
//! side's resize tables) is bounded or refused with [`ImagingError::TooComplex`] from the bytes'
//! structure, by both, before any expensive work. [`Preset::canonical`] names the one preset of
//! equal output, so a caller stores one original-size derivative for every large `size-N`.
//!
//! This crate must never know about HTTP, the database, access rules or where blobs are stored: it
//! turns bytes and a transform request into bytes, and nothing else.

mod cost;
mod error;
mod preset;
mod probe;
mod structure;
#[cfg(feature = "testing")]
pub mod testing;
mod transform;
mod vp8l;

pub use cost::{Cost, estimate};
pub use error::ImagingError;
pub use preset::{FocalPoint, MAX_SIZE, Preset, THUMBNAIL_SIDE};
pub use probe::{PROBE_BYTES, Probe, probe};
pub use structure::{GIF_CANVAS_FACTOR, GIF_CANVAS_FREE_PIXELS, MAX_JPEG_SCANS};
pub use transform::MAX_FILTER_SIDE;
pub use transform::{TransformOptions, Transformed, transform};
pub use vp8l::{MAX_WEBP_HUFFMAN_GROUPS, WEBP_FREE_GROUPS};
