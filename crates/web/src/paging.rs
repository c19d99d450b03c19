//! Links between the pages of a list, keeping the list's other query parameters (search,
//! filters), so a page's URL can be shared.

/// The previous and next page links of a list, and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pager {
    pub current: u64,
    pub last: u64,
    pub previous: Option<String>,
    pub next: Option<String>,
}

impl Pager {
    /// The links of page `current` of `last` at `path`, keeping `query`'s other parameters.
    #[must_use]
    pub fn new(path: &str, query: &str, current: u64, last: u64) -> Self {
        let link = |page: u64| {
            let mut url = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
                if k != "page" {
                    url.append_pair(&k, &v);
                }
            }
            url.append_pair("page", &page.to_string());
            format!("{path}?{}", url.finish())
        };
        Self {
            current,
            last: last.max(1),
            previous: (current > 1).then(|| link(current - 1)),
            next: (current < last).then(|| link(current + 1)),
        }
    }

    /// Whether there is more than one page (the links are shown).
    #[must_use]
    pub fn several(&self) -> bool {
        self.last > 1
    }
}

/// The first value of `name` in a raw query string.
#[must_use]
pub fn param(query: &str, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_keep_the_other_parameters_and_stop_at_the_ends() {
        let p = Pager::new("/users", "search=a%20b&page=2&trashed=only", 2, 3);
        assert_eq!(
            p.previous.as_deref(),
            Some("/users?search=a+b&trashed=only&page=1")
        );
        assert_eq!(
            p.next.as_deref(),
            Some("/users?search=a+b&trashed=only&page=3")
        );
        let first = Pager::new("/users", "", 1, 1);
        assert!(!first.several());
        assert_eq!((first.previous, first.next), (None, None));
        assert_eq!(param("search=a%20b", "search").as_deref(), Some("a b"));
        assert_eq!(param("x=1", "search"), None);
    }
}
