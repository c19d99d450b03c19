//! The UI's static files, embedded in the binary, and their cache-busting URLs.
//!
//! A page links `/assets/NAME?v=HASH`, where HASH is the start of the file's SHA-256: the
//! response can then be cached for a year (`immutable`), and a new build with a changed file
//! changes the URL. The route serving them lives in the HTTP crate.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "assets/"]
struct Files;

/// One static file: its bytes, MIME type and version (hash prefix).
#[derive(Debug, Clone)]
pub struct Asset {
    pub bytes: Cow<'static, [u8]>,
    pub content_type: &'static str,
    pub version: String,
}

/// Each file's version, computed once.
static VERSIONS: LazyLock<HashMap<String, String>> = LazyLock::new(|| {
    Files::iter()
        .filter_map(|name| {
            let file = Files::get(&name)?;
            let hash = file.metadata.sha256_hash();
            Some((name.into_owned(), hex::encode(hash.get(..6)?)))
        })
        .collect()
});

/// The file `name`, or `None` when the UI has no such file.
#[must_use]
pub fn get(name: &str) -> Option<Asset> {
    let file = Files::get(name)?;
    Some(Asset {
        bytes: file.data,
        content_type: content_type(name),
        version: VERSIONS.get(name).cloned().unwrap_or_default(),
    })
}

/// The URL a page links `name` by: versioned, so it can be cached for good.
#[must_use]
pub fn url(name: &str) -> String {
    match VERSIONS.get(name) {
        Some(version) => format!("/assets/{name}?v={version}"),
        None => format!("/assets/{name}"),
    }
}

/// The MIME type by extension: the UI ships only these kinds of file.
fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("css") => "text/css; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("txt") => "text/plain; charset=utf-8",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_linked_asset_is_embedded_with_a_version() {
        for name in [
            "app.css",
            "htmx-2.0.11.min.js",
            "htmx-LICENSE.txt",
            "passkeys.js",
            "locale-tabs.js",
            "copy.js",
            "upload.js",
            "focal.js",
            "role-preview.js",
            "pickers.js",
            "blocks.js",
            "chat.js",
            "ai.js",
        ] {
            let asset = get(name).unwrap_or_else(|| panic!("{name} is not embedded"));
            assert!(!asset.bytes.is_empty(), "{name}");
            assert_eq!(asset.version.len(), 12, "{name}");
            assert_eq!(url(name), format!("/assets/{name}?v={}", asset.version));
        }
        assert_eq!(
            get("app.css").map(|a| a.content_type),
            Some("text/css; charset=utf-8")
        );
        assert!(get("../Cargo.toml").is_none());
        assert!(get("nope.js").is_none());
    }
}
