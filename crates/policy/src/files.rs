//! File visibility and the file grant mapping of the spec.
//!
//! A file's stored `access` is `public`, `private` or null (inherit). Its effective visibility is
//! its own, or the nearest ancestor folder's; a null chain that reaches the root is public. Reads
//! (list, show, content, transforms, expansion in items) need `read` on effectively public files
//! and `read_private` on effectively private ones.

use std::fmt;

use crate::{Decision, FileAction, Reason, Role, WriteEcho};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Visibility {
    Public,
    Private,
}

impl Visibility {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
        }
    }

    /// Parses a stored `access` value: `public`, `private`, or anything else (null) as inherit.
    #[must_use]
    pub fn parse_access(raw: Option<&str>) -> Option<Self> {
        match raw {
            Some("public") => Some(Self::Public),
            Some("private") => Some(Self::Private),
            _ => None,
        }
    }
}

impl fmt::Display for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The effective visibility from the file's own `access` followed by its ancestors' (nearest
/// first). A chain of nulls resolves to public.
///
/// ```
/// use vellum_policy::{Visibility, effective_visibility};
/// use Visibility::*;
/// assert_eq!(effective_visibility([None, None, Some(Private)]), Private);
/// assert_eq!(effective_visibility([Some(Public), Some(Private)]), Public);
/// assert_eq!(effective_visibility([None, None]), Public);
/// ```
pub fn effective_visibility(chain: impl IntoIterator<Item = Option<Visibility>>) -> Visibility {
    chain
        .into_iter()
        .flatten()
        .next()
        .unwrap_or(Visibility::Public)
}

/// How a file referenced from an item renders with `include=files`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileExpansion {
    /// The full `ExpandedFileField`.
    Expanded,
    /// `{ id, access: 'denied' }`: a public file the role may not read (no URLs).
    Denied,
    /// null, or omitted from arrays: a private file without `read_private` (not even the id leaks).
    Hidden,
}

impl Role {
    /// May the role read (show, stream, transform) a file of this effective visibility?
    pub fn may_read_file(&self, visibility: Visibility) -> Decision {
        if self.is_super_admin() {
            return Decision::allow(Reason::SuperAdmin);
        }
        let needed = match visibility {
            Visibility::Public => FileAction::Read,
            Visibility::Private => FileAction::ReadPrivate,
        };
        Decision::new(
            self.files.allows(needed),
            Reason::FileVisibility { visibility },
        )
    }

    /// May the role list `/files` at all? Without `read` the list is refused; with it, entries
    /// the role may not read are omitted one by one ([`Role::may_read_file`]).
    pub fn may_list_files(&self) -> Decision {
        self.may_file(FileAction::Read)
    }

    /// What the response to an upload or metadata update may show of the file: the resource
    /// when this role's show would answer it, otherwise only its id.
    #[must_use]
    pub fn file_write_echo(&self, visibility: Visibility) -> WriteEcho {
        if self.may_read_file(visibility).allowed {
            WriteEcho::Resource
        } else {
            WriteEcho::IdOnly
        }
    }

    /// The expansion outcome of a file inside an item.
    #[must_use]
    pub fn file_expansion(&self, visibility: Visibility) -> FileExpansion {
        if self.may_read_file(visibility).allowed {
            FileExpansion::Expanded
        } else if visibility == Visibility::Private {
            FileExpansion::Hidden
        } else {
            FileExpansion::Denied
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FileGrants;

    fn role(read: bool, read_private: bool) -> Role {
        Role {
            name: "r".into(),
            files: FileGrants {
                read,
                read_private,
                ..FileGrants::default()
            },
            ..Role::default()
        }
    }

    #[test]
    fn inheritance_three_levels_deep() {
        use Visibility::*;
        // file -> folder -> parent folder -> grandparent folder
        let rows = [
            ([None, None, None, Some(Private)], Private),
            ([None, None, Some(Public), Some(Private)], Public),
            ([None, Some(Private), None, Some(Public)], Private),
            ([Some(Public), None, None, Some(Private)], Public),
            ([None, None, None, None], Public),
        ];
        for (chain, expected) in rows {
            assert_eq!(effective_visibility(chain), expected, "{chain:?}");
        }
        assert_eq!(Visibility::parse_access(Some("private")), Some(Private));
        assert_eq!(Visibility::parse_access(None), None);
        assert_eq!(Visibility::parse_access(Some("weird")), None);
    }

    /// The spec's file grant mapping for reads, and the expansion outcomes.
    #[test]
    fn read_mapping_and_expansion_outcomes() {
        use FileExpansion::*;
        use Visibility::*;
        let rows = [
            // read, read_private, visibility, may read, expansion
            (true, false, Public, true, Expanded),
            (false, false, Public, false, Denied),
            (false, true, Public, false, Denied),
            (true, false, Private, false, Hidden),
            (false, false, Private, false, Hidden),
            (true, true, Private, true, Expanded),
            (false, true, Private, true, Expanded),
        ];
        for (read, read_private, vis, may, expansion) in rows {
            let r = role(read, read_private);
            assert_eq!(
                r.may_read_file(vis).allowed,
                may,
                "{read} {read_private} {vis}"
            );
            assert_eq!(
                r.file_expansion(vis),
                expansion,
                "{read} {read_private} {vis}"
            );
        }
        assert!(!role(false, true).may_list_files().allowed);
        assert!(role(true, false).may_list_files().allowed);
        let d = role(true, false).may_read_file(Private);
        assert_eq!(
            d.to_string(),
            "denied: the file is effectively private; the role lacks the files read_private grant"
        );
        let sa = Role {
            name: "super-admin".into(),
            ..Role::default()
        };
        assert_eq!(sa.file_expansion(Private), Expanded);
    }
}
