//! Capabilities: proof that the policy allowed a write. Their fields are private and there is no
//! public constructor, so the storage crate's write paths, which demand them, cannot be reached
//! without asking the policy first.

use vellum_domain::CollectionSlug;

use crate::{CollectionAction, FileAction, Filter, ItemRef, Reason, Visibility};

/// A value `T` the policy authorized, with the reason it was allowed.
#[derive(Debug, Clone, PartialEq)]
pub struct Authorized<T> {
    value: T,
    reason: Reason,
}

impl<T> Authorized<T> {
    pub(crate) fn new(value: T, reason: Reason) -> Self {
        Self { value, reason }
    }

    #[must_use]
    pub fn get(&self) -> &T {
        &self.value
    }

    #[must_use]
    pub fn reason(&self) -> &Reason {
        &self.reason
    }
}

/// An authorized item write (create, update or delete) on one collection. It carries the role's
/// item filter, which the stored result of a create or update must still satisfy, and which
/// limits the items an update or delete can reach.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemWrite {
    pub collection: CollectionSlug,
    pub action: CollectionAction,
    pub item_filter: Option<Filter>,
}

impl ItemWrite {
    /// Whether `item` (as it would be stored) lies inside the role's item filter. A write whose
    /// result does not is refused with nothing written.
    #[must_use]
    pub fn admits(&self, item: &ItemRef<'_>) -> bool {
        self.item_filter.as_ref().is_none_or(|f| f.matches(item))
    }
}

/// An authorized file write (`create`, `update` or `delete`). It carries whether the role may
/// read effective-private files: an update or delete reaches only what the same role's show
/// reaches, so an effective-private file or folder is, for a role without `read_private`,
/// refused exactly as show refuses it, and nothing is written. (An upload into a private folder
/// is allowed: it reads nothing, and its response shows only what the uploader may read.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileWrite {
    pub action: FileAction,
    pub reaches_private: bool,
}

impl FileWrite {
    /// Whether the write may touch a file of this effective visibility.
    #[must_use]
    pub fn reaches(&self, visibility: Visibility) -> bool {
        self.reaches_private || visibility == Visibility::Public
    }
}
