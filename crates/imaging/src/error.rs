//! The one error type of this crate.

/// Why a transform could not be produced.
///
/// The HTTP layer maps these to responses; none of them is a server fault except
/// [`ImagingError::Encode`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImagingError {
    /// The bytes are not a JPEG, PNG, WebP or GIF image (`mime` is what they were sniffed as).
    #[error("unsupported image type {mime}")]
    Unsupported { mime: String },
    /// The header declares more pixels than allowed: refused before any decoding.
    #[error("image of {width}x{height} pixels exceeds the limit of {max} pixels")]
    TooManyPixels { width: u32, height: u32, max: u64 },
    /// The image's structure exceeds a limit that bounds what decoding it costs beyond its pixel
    /// count (progressive scans, Huffman groups, ancillary chunks, a GIF canvas, an aspect
    /// ratio): refused before the expensive work. `what` names the limit.
    #[error("the image exceeds a decoding limit: {what}")]
    TooComplex { what: String },
    /// The image could not be decoded (truncated, corrupt, or a variant the decoders reject).
    #[error("corrupt image: {0}")]
    Corrupt(String),
    /// The result could not be encoded.
    #[error("could not encode the image: {0}")]
    Encode(String),
}
