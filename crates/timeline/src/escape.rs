//! Escaping caller text for HTML and SVG.
//!
//! Terminology:
//! - *text*: any string that comes from the caller (title, header lines, trace lines,
//!   invariant names, sentences). It is escaped once, the same way for element content and
//!   for attribute values, so it can never open a tag, an entity or an attribute.
//! - *control character*: a C0 character other than tab and newline; XML forbids them, so
//!   they are replaced by U+FFFD.

/// `text` with `& < > " '` turned into entities and control characters replaced.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

/// Appends `text`, escaped, to `out`.
pub(crate) fn push_escaped(out: &mut String, text: &str) {
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(ch),
            ch if ch.is_control() => out.push('\u{FFFD}'),
            ch => out.push(ch),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_characters_become_entities() {
        assert_eq!(
            escape(r#"<a href="x">Tom & 'Jerry'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn plain_text_and_unicode_pass_through() {
        assert_eq!(escape("steady · seed 42 → ok"), "steady · seed 42 → ok");
        assert_eq!(escape("a\tb\nc"), "a\tb\nc");
    }

    #[test]
    fn control_characters_are_replaced() {
        assert_eq!(escape("a\u{0}b\u{1b}c"), "a\u{FFFD}b\u{FFFD}c");
    }

    #[test]
    fn entities_are_escaped_again_not_trusted() {
        assert_eq!(escape("&amp;"), "&amp;amp;");
    }
}
