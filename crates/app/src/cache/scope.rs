//! Per-collection epochs: what a content write invalidates, and what a cached read depends on.
//!
//! The global epoch moves with every change of the project itself (schema, roles, grants, keys,
//! settings, users) and invalidates everything. A write of items moves only its collection's
//! counter, a write of files only the files counter, and both move [`Scope::Any`]. A cached read
//! is stamped with the global epoch and the counters of the scopes its answer can contain
//! ([`dependencies`]): the collection itself, every collection its relations reach (an `include`
//! renders them, a filter may compare them), and files when a file field is reachable. A write
//! to `articles` therefore leaves the cached pages of an unrelated `pages` collection warm.

use std::collections::{BTreeSet, HashMap};

use vellum_domain::{FieldDef, FieldType, TypeSettings};
use vellum_storage::model::Collection;

use super::key::KeyHasher;

/// Stamps are kept below this bit so they never look like an offline epoch of the Redis
/// backend (which serves uncached above it).
const STAMP_MASK: u64 = (1 << 62) - 1;

/// A part of the content with a counter of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// The items of one collection (by id).
    Collection(i64),
    /// Files and folders.
    Files,
    /// Moved by every content write: the dependency of a read whose sources cannot be listed.
    Any,
}

impl Scope {
    /// The counter's name (a Redis key suffix).
    #[must_use]
    pub fn name(self) -> String {
        match self {
            Self::Collection(id) => format!("c:{id}"),
            Self::Files => "files".to_owned(),
            Self::Any => "any".to_owned(),
        }
    }
}

/// The stamp of a read: the global epoch itself when it depends on no scope, else a digest of
/// the global epoch and every scope's counter. It equals an earlier stamp only when none of the
/// counters moved (short of a 62-bit collision).
#[must_use]
pub fn stamp(global: u64, counters: &[(Scope, u64)]) -> u64 {
    if counters.is_empty() {
        return global;
    }
    let mut key = KeyHasher::new("stamp v1");
    key.debug_part(&global);
    // Streamed, not formatted first: this runs on every cached read.
    for (scope, value) in counters {
        key.debug_part(scope).debug_part(value);
    }
    let digest = key.finish();
    let mut first = [0_u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first) & STAMP_MASK
}

/// The scopes each collection's answers depend on, by collection id: the transitive closure of
/// its relations, plus files when a file field is reachable. A closure that reaches a relation
/// with no listed target is `[Any]`.
#[must_use]
pub fn dependencies(collections: &[impl AsRef<Collection>]) -> HashMap<i64, Vec<Scope>> {
    let direct: HashMap<i64, BTreeSet<Scope>> = collections
        .iter()
        .map(|c| {
            let c = c.as_ref();
            let mut out = BTreeSet::new();
            for field in &c.fields {
                direct_scopes(&field.def, &mut out);
            }
            (c.id, out)
        })
        .collect();
    direct
        .keys()
        .map(|&id| {
            let mut seen = BTreeSet::from([Scope::Collection(id)]);
            let mut queue = vec![id];
            while let Some(next) = queue.pop() {
                for scope in direct.get(&next).into_iter().flatten() {
                    if seen.insert(*scope)
                        && let Scope::Collection(target) = scope
                    {
                        queue.push(*target);
                    }
                }
            }
            let scopes = if seen.contains(&Scope::Any) {
                vec![Scope::Any]
            } else {
                seen.into_iter().collect()
            };
            (id, scopes)
        })
        .collect()
}

/// What one field (and the fields of its block types) points at directly.
fn direct_scopes(field: &FieldDef, out: &mut BTreeSet<Scope>) {
    if matches!(
        field.field_type,
        FieldType::Image | FieldType::File | FieldType::Files
    ) {
        out.insert(Scope::Files);
    }
    match &field.settings.kind {
        TypeSettings::Relation(rel) | TypeSettings::ManyToMany { relation: rel, .. } => {
            out.insert(
                rel.related_collection_id
                    .map_or(Scope::Any, Scope::Collection),
            );
        }
        TypeSettings::M2a {
            allowed_collection_ids,
            ..
        } => {
            if allowed_collection_ids.is_empty() {
                out.insert(Scope::Any);
            }
            out.extend(
                allowed_collection_ids
                    .iter()
                    .copied()
                    .map(Scope::Collection),
            );
        }
        TypeSettings::Blocks(blocks) => {
            for block in &blocks.block_types {
                for nested in &block.fields {
                    direct_scopes(nested, out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_moves_with_any_of_its_counters() {
        let base = stamp(7, &[(Scope::Collection(1), 3), (Scope::Files, 9)]);
        assert_eq!(
            base,
            stamp(7, &[(Scope::Collection(1), 3), (Scope::Files, 9)])
        );
        assert_ne!(
            base,
            stamp(8, &[(Scope::Collection(1), 3), (Scope::Files, 9)])
        );
        assert_ne!(
            base,
            stamp(7, &[(Scope::Collection(1), 4), (Scope::Files, 9)])
        );
        assert_ne!(
            base,
            stamp(7, &[(Scope::Collection(1), 3), (Scope::Files, 10)])
        );
        assert_ne!(
            base,
            stamp(7, &[(Scope::Collection(2), 3), (Scope::Files, 9)])
        );
        assert!(base <= STAMP_MASK);
        assert_eq!(
            stamp(41, &[]),
            41,
            "a read of the project alone is its epoch"
        );
    }
}
