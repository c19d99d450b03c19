//! A list page's URL is its state (filters, sort, columns, trash view, page), so it can be
//! bookmarked and shared: these build the URL of the same list with one thing changed.

use url::form_urlencoded::{Serializer, parse};

/// The pairs of a raw query string, decoded.
#[must_use]
pub fn pairs(query: &str) -> Vec<(String, String)> {
    parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// `path?query` from `pairs` (just `path` when there are none).
#[must_use]
pub fn href(path: &str, pairs: &[(String, String)]) -> String {
    if pairs.is_empty() {
        return path.to_owned();
    }
    let mut url = Serializer::new(String::new());
    for (k, v) in pairs {
        url.append_pair(k, v);
    }
    format!("{path}?{}", url.finish())
}

/// `query` without the keys `drop` names and without `page` (any change starts again at the
/// first page), then with `set` appended.
#[must_use]
pub fn changed(query: &str, drop: &[&str], set: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut kept: Vec<(String, String)> = pairs(query)
        .into_iter()
        .filter(|(k, _)| k != "page" && !drop.contains(&k.as_str()))
        .collect();
    kept.extend(set.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    kept
}

/// The filter builder's fields: the form sends `where_field`, `where_op` and `where_value`
/// (plain HTML cannot name a field `filter[title][_eq]` it has just picked); this is the list's
/// canonical URL with that condition added as `filter[field][op]=value`, or `None` when the
/// query has no `where_field` (nothing to rewrite).
#[must_use]
pub fn add_filter(path: &str, query: &str) -> Option<String> {
    let all = pairs(query);
    let get = |name: &str| {
        all.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim().to_owned())
    };
    let field = get("where_field")?;
    let op = get("where_op").unwrap_or_default();
    let value = get("where_value").unwrap_or_default();
    let mut kept = changed(query, &["where_field", "where_op", "where_value"], &[]);
    if !field.is_empty() {
        let op = if op.is_empty() { "_eq".to_owned() } else { op };
        // `_null` and `_nnull` take no operand: the filter grammar wants `true`.
        let value = if matches!(op.as_str(), "_null" | "_nnull") {
            "true".to_owned()
        } else {
            value
        };
        kept.push((format!("filter[{field}][{op}]"), value));
    }
    Some(href(path, &kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_keeps_the_rest_and_starts_at_page_one() {
        let kept = changed("sort=title&page=3&trashed=1", &["sort"], &[("sort", "id")]);
        assert_eq!(href("/l", &kept), "/l?trashed=1&sort=id");
        assert_eq!(href("/l", &[]), "/l");
    }

    #[test]
    fn the_filter_builder_becomes_a_filter_pair() {
        assert_eq!(
            add_filter(
                "/l",
                "filter%5Bviews%5D%5B_gt%5D=3&where_field=title&where_op=_contains&where_value=a+b&page=2"
            )
            .as_deref(),
            Some("/l?filter%5Bviews%5D%5B_gt%5D=3&filter%5Btitle%5D%5B_contains%5D=a+b")
        );
        assert_eq!(
            add_filter("/l", "where_field=title&where_op=_null&where_value=x").as_deref(),
            Some("/l?filter%5Btitle%5D%5B_null%5D=true")
        );
        // No field picked: the builder's fields are dropped, nothing is added.
        assert_eq!(
            add_filter("/l", "sort=id&where_field=&where_op=_eq").as_deref(),
            Some("/l?sort=id")
        );
        assert_eq!(add_filter("/l", "sort=id"), None);
    }
}
