//! Message bodies: plain text, checked and normalized on the way in, escaped on the way out.
//!
//! No markup a user types ever reaches another user's page as markup: [`render_html`] escapes
//! everything and adds only its own elements (line breaks, links to `http(s)` URLs, mention
//! highlights), so there is no sanitizer to get wrong. The web UI sets the result as HTML; JSON
//! clients get the raw `body` and this `html` beside it.

use serde::{Deserialize, Serialize};
use vellum_domain::ValidationErrors;

/// The longest message body, in characters.
pub const MAX_BODY_CHARS: usize = 10_000;
/// The activity log's body preview, in characters (the spec's limit).
pub const PREVIEW_CHARS: usize = 120;

/// Someone a message mentions, with the name it had then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mentioned {
    pub id: i64,
    pub name: String,
}

/// A message's mentions as stored (JSON) and shown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mentions {
    #[serde(default)]
    pub users: Vec<Mentioned>,
    #[serde(default)]
    pub groups: Vec<Mentioned>,
}

impl Mentions {
    #[must_use]
    pub fn len(&self) -> usize {
        self.users.len() + self.groups.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored form; an unreadable stored value reads as no mentions.
    pub(crate) fn parse(stored: &str) -> Self {
        serde_json::from_str(stored).unwrap_or_default()
    }

    pub(crate) fn stored(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }
}

/// The body normalized: line breaks as `\n`, surrounding whitespace trimmed. Records a problem
/// in `errors` (under `body`) for a body that is too long or holds control characters other
/// than line breaks and tabs. An empty body is returned as empty: whether that is allowed
/// (with attachments) is the caller's call.
pub(crate) fn clean_body(raw: &str, errors: &mut ValidationErrors) -> String {
    let body = raw.replace("\r\n", "\n").replace('\r', "\n");
    let body = body.trim();
    if body.chars().count() > MAX_BODY_CHARS {
        errors.add(
            "body",
            format!("The message may not be longer than {MAX_BODY_CHARS} characters."),
        );
    }
    if body
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        errors.add("body", "The message may not contain control characters.");
    }
    body.to_owned()
}

/// The first [`PREVIEW_CHARS`] characters, whitespace runs collapsed to one space.
#[must_use]
pub fn preview(body: &str) -> String {
    body.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(PREVIEW_CHARS)
        .collect()
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' => out.push_str("<br>"),
            c => out.push(c),
        }
    }
}

/// The length in bytes of the URL starting `rest`, when it starts with one.
fn url_len(rest: &str) -> Option<usize> {
    if !(rest.starts_with("https://") || rest.starts_with("http://")) {
        return None;
    }
    let end = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '\'' | '`'))
        .unwrap_or(rest.len());
    // A sentence's full stop or closing bracket is not part of the link.
    let url = rest[..end].trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
    (url.len() > "https://".len()).then_some(url.len())
}

/// The body as HTML: escaped text, `<br>` for line breaks, `<a>` for `http(s)` URLs and
/// `<span class="mention">` for `@name` of each mentioned user or group.
#[must_use]
pub fn render_html(body: &str, mentions: &Mentions) -> String {
    let mut names: Vec<&str> = mentions
        .users
        .iter()
        .chain(&mentions.groups)
        .map(|m| m.name.as_str())
        .filter(|name| !name.is_empty())
        .collect();
    // The longest name first, so `@Ada Lovelace` wins over `@Ada`.
    names.sort_by_key(|name| std::cmp::Reverse(name.len()));
    let mut out = String::with_capacity(body.len() + body.len() / 4);
    let mut rest = body;
    while let Some(c) = rest.chars().next() {
        if c == '@'
            && let Some(name) = names.iter().find(|name| rest[1..].starts_with(**name))
        {
            out.push_str("<span class=\"mention\">@");
            escape_into(&mut out, name);
            out.push_str("</span>");
            rest = &rest[1 + name.len()..];
            continue;
        }
        if let Some(len) = url_len(rest) {
            out.push_str("<a href=\"");
            escape_into(&mut out, &rest[..len]);
            out.push_str("\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">");
            escape_into(&mut out, &rest[..len]);
            out.push_str("</a>");
            rest = &rest[len..];
            continue;
        }
        escape_into(&mut out, &rest[..c.len_utf8()]);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mentions(users: &[&str]) -> Mentions {
        Mentions {
            users: users
                .iter()
                .enumerate()
                .map(|(i, name)| Mentioned {
                    id: i64::try_from(i).unwrap() + 1,
                    name: (*name).to_owned(),
                })
                .collect(),
            groups: Vec::new(),
        }
    }

    #[test]
    fn markup_is_escaped_never_interpreted() {
        let html = render_html(
            "<script>alert('x')</script> & <img src=x onerror=alert(1)>",
            &Mentions::default(),
        );
        assert_eq!(
            html,
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;"
        );
    }

    #[test]
    fn links_and_mentions_are_the_only_elements_added() {
        let html = render_html(
            "hi @Ada Lovelace, see https://example.com/a?b=1&c=2.\nbye @Bob",
            &mentions(&["Ada", "Ada Lovelace"]),
        );
        assert_eq!(
            html,
            "hi <span class=\"mention\">@Ada Lovelace</span>, see <a href=\"https://example.com/a?b=1&amp;c=2\" \
             rel=\"noopener noreferrer nofollow\" target=\"_blank\">https://example.com/a?b=1&amp;c=2</a>.<br>bye @Bob"
        );
    }

    #[test]
    fn a_url_cannot_break_out_of_its_attribute() {
        let html = render_html("http://x.y/\"onmouseover=alert(1)", &Mentions::default());
        assert!(html.starts_with("<a href=\"http://x.y/\" "), "{html}");
        assert!(html.contains("&quot;onmouseover"), "{html}");
        assert_eq!(
            render_html("javascript:alert(1)", &Mentions::default()),
            "javascript:alert(1)"
        );
    }

    #[test]
    fn a_mention_name_is_escaped_too() {
        let html = render_html("@<b>", &mentions(&["<b>"]));
        assert_eq!(html, "<span class=\"mention\">@&lt;b&gt;</span>");
    }

    #[test]
    fn bodies_are_normalized_and_bounded() {
        let mut errors = ValidationErrors::new();
        assert_eq!(clean_body("  a\r\nb\r  ", &mut errors), "a\nb");
        assert!(errors.is_empty());
        clean_body("bell\u{7}", &mut errors);
        assert!(!errors.is_empty());
        let mut errors = ValidationErrors::new();
        clean_body(&"x".repeat(MAX_BODY_CHARS + 1), &mut errors);
        assert!(!errors.is_empty());
        let mut errors = ValidationErrors::new();
        clean_body(&"é".repeat(MAX_BODY_CHARS), &mut errors);
        assert!(errors.is_empty());
    }

    #[test]
    fn previews_collapse_whitespace_and_stop_at_120_characters() {
        assert_eq!(preview("a \n\n b"), "a b");
        assert_eq!(preview(&"ü".repeat(200)).chars().count(), PREVIEW_CHARS);
    }
}
