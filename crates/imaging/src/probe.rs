//! What a file is, from its first bytes: the MIME type sniffed from magic numbers (never the
//! client's claim), the matching extension, and for images the pixel size read from the header
//! without decoding the image.

/// How many leading bytes [`probe`] needs to see: enough for every header `imagesize` reads
/// (JPEG's SOF marker can sit after large EXIF segments).
pub const PROBE_BYTES: usize = 256 * 1024;

/// The result of [`probe`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The sniffed MIME type, `application/octet-stream` when nothing matched.
    pub mime_type: String,
    /// The canonical extension of the sniffed type, if it has one.
    pub extension: Option<String>,
    /// Pixel width and height, for images whose header could be read.
    pub width: Option<u32>,
    pub height: Option<u32>,
}

/// Classifies a file from its leading bytes (`head`, ideally [`PROBE_BYTES`] long or the whole
/// file when shorter).
#[must_use]
pub fn probe(head: &[u8]) -> Probe {
    let kind = infer::get(head);
    let mime_type = kind.map_or("application/octet-stream", |k| k.mime_type());
    let extension = kind.map(|k| k.extension().to_owned());
    let size = if mime_type.starts_with("image/") {
        imagesize::blob_size(head).ok()
    } else {
        None
    };
    Probe {
        mime_type: mime_type.to_owned(),
        extension,
        width: size.and_then(|s| u32::try_from(s.width).ok()),
        height: size.and_then(|s| u32::try_from(s.height).ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3x2 PNG (header only is enough for the size).
    const PNG_3X2: &[u8] = &[
        0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0,
        0, 3, 0, 0, 0, 2, 8, 2, 0, 0, 0, 0x12, 0x16, 0xf1, 0x4d,
    ];

    #[test]
    fn png_type_extension_and_size() {
        let p = probe(PNG_3X2);
        assert_eq!(p.mime_type, "image/png");
        assert_eq!(p.extension.as_deref(), Some("png"));
        assert_eq!((p.width, p.height), (Some(3), Some(2)));
    }

    #[test]
    fn the_demo_jpeg_is_recognized() {
        let bytes = include_bytes!("../../../fixtures/images/draft.jpg");
        let p = probe(bytes);
        assert_eq!(p.mime_type, "image/jpeg");
        assert_eq!(p.extension.as_deref(), Some("jpg"));
        assert_eq!((p.width, p.height), (Some(800), Some(600)));
    }

    #[test]
    fn unknown_and_empty_bytes_are_octet_streams_without_size() {
        for bytes in [&b""[..], b"hello world", &[0xff, 0xd8][..]] {
            let p = probe(bytes);
            assert!(p.width.is_none(), "{bytes:?}");
            if p.mime_type != "image/jpeg" {
                assert_eq!(p.mime_type, "application/octet-stream");
            }
        }
    }

    #[test]
    fn an_html_file_claiming_nothing_is_not_an_image() {
        let p = probe(b"<!DOCTYPE html><script>alert(1)</script>");
        assert!(!p.mime_type.starts_with("image/"));
    }
}
