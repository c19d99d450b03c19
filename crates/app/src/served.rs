//! What a warm file read needs, remembered per epoch: a file's content and its transform
//! outputs were two statements and a `stat` per request (the file row with its effective
//! visibility, the transform row, the blob's existence), most of a warm derivative's cost
//! (issue 23). Every write of files (and every change of the project) moves the files stamp
//! ([`crate::cache::scope`]), so an entry computed before a write is never served after it: an
//! entry remembers the stamp read *before* its rows were, and is used only while that is still
//! the current stamp. The actor's permission is decided on every request from the
//! remembered visibility; only the lookups are skipped.
//!
//! Blobs can vanish without a write (a transform evicted for disk space): a served entry whose
//! blob is gone is forgotten and the request resolves once more from the database.

use std::sync::Arc;
use std::time::SystemTime;

use moka::sync::Cache;
use vellum_storage::files::StoredTransform;

use vellum_policy::Visibility;

/// Bytes to stream: a file's original or a transform output, with its validators.
#[derive(Debug, Clone)]
pub struct Download {
    pub storage_key: String,
    pub size: u64,
    pub mime_type: String,
    /// The strong `ETag`, quoted.
    pub etag: String,
    pub modified: Option<SystemTime>,
    /// The file's effective visibility: public outputs may be cached by shared caches.
    pub visibility: Visibility,
    pub download_name: Option<String>,
    /// Whether `Range` is honoured (content yes, transforms no).
    pub ranges: bool,
    /// Whether the bytes behind this answer never change: a transform asked for by a signed URL
    /// whose version is current (`crate::transform_urls`). Caches may then keep it a year.
    pub immutable: bool,
}

/// Entries kept at most (a few hundred bytes each): the working set of a busy site's images.
const MAX_ENTRIES: u64 = 10_000;

/// What the entry is for: a file's original bytes, or one of its transform outputs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Served {
    Content(i64),
    /// The file and the preset key as requested (`size-400`).
    Transform(i64, String),
}

/// A remembered answer and the epoch it holds for.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) epoch: u64,
    pub(crate) download: Download,
    /// The transform's row, whose `last_used_at` says when the eviction order needs a touch.
    pub(crate) transform: Option<StoredTransform>,
    /// The transform output's version (`v` of its signed URL), checked against a signed request.
    pub(crate) version: Option<String>,
}

/// The bounded map of remembered answers (one per process).
#[derive(Debug, Clone)]
pub(crate) struct ServedFiles {
    entries: Cache<Served, Arc<Entry>>,
}

impl Default for ServedFiles {
    fn default() -> Self {
        Self {
            entries: Cache::builder().max_capacity(MAX_ENTRIES).build(),
        }
    }
}

impl ServedFiles {
    /// The entry for `what` if it was computed at `epoch`.
    pub(crate) fn get(&self, what: &Served, epoch: u64) -> Option<Arc<Entry>> {
        self.entries.get(what).filter(|entry| entry.epoch == epoch)
    }

    pub(crate) fn put(&self, what: Served, entry: Entry) {
        self.entries.insert(what, Arc::new(entry));
    }

    /// Forgets the entry for `what` (its blob was found missing).
    pub(crate) fn forget(&self, what: &Served) {
        self.entries.invalidate(what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn download() -> Download {
        Download {
            storage_key: "k".to_owned(),
            size: 1,
            mime_type: "image/jpeg".to_owned(),
            etag: "\"h\"".to_owned(),
            modified: None,
            visibility: Visibility::Public,
            download_name: None,
            ranges: true,
            immutable: false,
        }
    }

    #[test]
    fn an_entry_holds_only_for_its_epoch_and_until_forgotten() {
        let served = ServedFiles::default();
        let entry = |epoch| Entry {
            epoch,
            download: download(),
            transform: None,
            version: None,
        };
        served.put(Served::Content(1), entry(7));
        served.put(Served::Transform(1, "size-400".to_owned()), entry(7));
        served.put(Served::Content(2), entry(7));
        assert!(served.get(&Served::Content(1), 7).is_some());
        assert!(
            served.get(&Served::Content(1), 8).is_none(),
            "a later epoch misses"
        );
        served.forget(&Served::Content(1));
        assert!(served.get(&Served::Content(1), 7).is_none());
        assert!(
            served
                .get(&Served::Transform(1, "size-400".to_owned()), 7)
                .is_some(),
            "only the entry whose blob went missing is forgotten"
        );
        assert!(served.get(&Served::Content(2), 7).is_some());
    }
}
