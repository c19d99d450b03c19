/// Sanitizes `wysiwyg` HTML with ammonia's allowlist: scripts, styles, event handlers,
/// `javascript:` URLs and every tag outside the list are removed.
///
/// HTML parsing can re-balance markup, so one pass is not always a fixed point; sanitizing until
/// the output stops changing (bounded) makes normalization idempotent, as stored values must be.
#[must_use]
pub fn sanitize_html(input: &str) -> String {
    let mut current = ammonia::clean(input);
    for _ in 0..4 {
        let next = ammonia::clean(&current);
        if next == current {
            break;
        }
        current = next;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_active_content() {
        assert_eq!(
            sanitize_html("<p>Hi<script>alert(1)</script></p>"),
            "<p>Hi</p>"
        );
        assert_eq!(
            sanitize_html("<a href=\"javascript:alert(1)\">x</a>"),
            "<a rel=\"noopener noreferrer\">x</a>"
        );
        assert_eq!(
            sanitize_html("<img src=x onerror=alert(1)>"),
            "<img src=\"x\">"
        );
        assert_eq!(
            sanitize_html("<iframe src=\"//evil\"></iframe><b>ok</b>"),
            "<b>ok</b>"
        );
        assert_eq!(sanitize_html("<p style=\"color:red\">t</p>"), "<p>t</p>");
    }

    #[test]
    fn keeps_ordinary_markup() {
        let html = "<h2>Title</h2><p><strong>bold</strong> and <em>em</em></p><ul><li>a</li></ul>";
        assert_eq!(sanitize_html(html), html);
    }
}
