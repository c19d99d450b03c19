//! Manifest paths in the form operators read: `collections[1].fields[3].type`.

/// `prefix` followed by `child`: `.child` for a name, nothing extra for an empty child.
pub(crate) fn join(prefix: &str, child: &str) -> String {
    match (prefix.is_empty(), child.is_empty()) {
        (_, true) => prefix.to_owned(),
        (true, false) => child.to_owned(),
        (false, false) if child.starts_with('[') => format!("{prefix}{child}"),
        (false, false) => format!("{prefix}.{child}"),
    }
}

/// A JSON Pointer (`/collections/1/fields/3/type`) as a manifest path.
pub(crate) fn from_pointer(pointer: &str) -> String {
    let mut out = String::new();
    for raw in pointer.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(&segment);
            out.push(']');
        } else {
            out = join(&out, &segment);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_become_dotted_paths() {
        assert_eq!(
            from_pointer("/collections/1/fields/3/type"),
            "collections[1].fields[3].type"
        );
        assert_eq!(from_pointer(""), "");
        assert_eq!(from_pointer("/items/a~1b/0"), "items.a/b[0]");
    }

    #[test]
    fn join_handles_empty_sides_and_indexes() {
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a", ""), "a");
        assert_eq!(join("a", "b"), "a.b");
        assert_eq!(join("a", "[0]"), "a[0]");
    }
}
