//! How a tool's result is shown to the model: as it is, or (an HTML page) as its text.

use serde_json::Value;

/// How a tool's result is shown to the model. Every tool loop (ReAct's modes, `Predict` with
/// tools, [`ToolExecutor`](crate::module::ToolExecutor)) asks it before the size limit applies;
/// what it returns is what the model reads, and the trajectory keeps the result itself
/// ([`Observation::Truncated`](super::Observation::Truncated): `shown` and `full`).
///
/// ```
/// use serde_json::{Value, json};
/// use signet::module::react::ObservationFormatter;
///
/// /// Shows only the first line of any text result.
/// #[derive(Debug)]
/// struct FirstLine;
///
/// impl ObservationFormatter for FirstLine {
///     fn format(&self, _tool: &str, output: &Value) -> Option<String> {
///         output.as_str().and_then(|text| text.lines().next()).map(str::to_owned)
///     }
/// }
/// assert_eq!(FirstLine.format("read", &json!("a\nb")), Some("a".to_owned()));
/// ```
pub trait ObservationFormatter: Send + Sync + std::fmt::Debug {
    /// The text the model reads instead of `output`, the result of tool `tool`; `None` shows the
    /// result as it is.
    fn format(&self, tool: &str, output: &Value) -> Option<String>;
}

/// The default formatter: a result that is an HTML page (a string starting with `<!doctype html`,
/// `<html` or `<head`) is shown as the page's text — headings, paragraphs, lists and links as a
/// reader sees them, without markup, scripts or styles — after a line saying so; anything else as
/// it is. A fetched page is mostly markup: its text is what the model can use, and it fits the
/// observation limit where the page would be cut in its `<head>`.
///
/// ```
/// use serde_json::json;
/// use signet::module::react::{HtmlAsText, ObservationFormatter};
///
/// let page = json!("<!DOCTYPE html><html><head><script>var x = 1;</script></head>\
///                   <body><h1>Oslo</h1><p>Rain, 7 °C.</p></body></html>");
/// let shown = HtmlAsText.format("fetch", &page).unwrap();
/// assert!(shown.starts_with("[an HTML page of 112 characters, shown as its text]"));
/// assert!(shown.contains("Rain, 7 °C.") && !shown.contains("var x"));
/// assert_eq!(HtmlAsText.format("fetch", &json!("plain text")), None);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlAsText;

/// Shows every result as it is (DSPy's behaviour).
#[derive(Debug, Clone, Copy, Default)]
pub struct AsIs;

/// The width of the text an HTML page is rendered to.
const TEXT_WIDTH: usize = 100;

impl ObservationFormatter for HtmlAsText {
    fn format(&self, _tool: &str, output: &Value) -> Option<String> {
        let page = output.as_str()?;
        // A page nested deeper than any real one would take the HTML parser quadratic time (a
        // 1 MB page of nested `<div>`s: 27 s); it is shown as it is, cut by the size limit.
        if !is_html_page(page) || nesting_over(page, MAX_NESTING) {
            return None;
        }
        let text = html2text::config::plain()
            .no_link_wrapping()
            .string_from_read(page.as_bytes(), TEXT_WIDTH)
            .ok()?;
        Some(format!(
            "[an HTML page of {} characters, shown as its text]\n{}",
            page.chars().count(),
            text.trim()
        ))
    }
}

impl ObservationFormatter for AsIs {
    fn format(&self, _tool: &str, _output: &Value) -> Option<String> {
        None
    }
}

/// How deeply a page's elements may nest for it to be shown as text.
const MAX_NESTING: usize = 512;

/// Elements that have no closing tag.
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// Whether the elements of `page` nest deeper than `max`, counted in one pass over its tags
/// (opening tags of non-void elements go in, closing tags come out; comments, declarations and
/// self-closing tags count for nothing). Unclosed elements count as open, so a sloppy page can only
/// be over-counted: it is then shown as it is.
fn nesting_over(page: &str, max: usize) -> bool {
    let mut depth = 0usize;
    for tag in page.split('<').skip(1) {
        if let Some(rest) = tag.strip_prefix('/') {
            if rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
                depth = depth.saturating_sub(1);
            }
            continue;
        }
        if !tag.starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let head = tag.split('>').next().unwrap_or(tag);
        if VOID.contains(&name.as_str()) || head.ends_with('/') {
            continue;
        }
        depth += 1;
        if depth > max {
            return true;
        }
    }
    false
}

/// Whether `text` is an HTML document (not a fragment that merely holds a tag).
fn is_html_page(text: &str) -> bool {
    let start: String = text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .take(16)
        .collect::<String>()
        .to_ascii_lowercase();
    ["<!doctype html", "<html", "<head"]
        .iter()
        .any(|opening| start.starts_with(opening))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_whole_pages_are_converted() {
        assert!(is_html_page("\u{feff}  <!DOCTYPE HTML><p>x"));
        assert!(is_html_page("<html lang=\"en\">"));
        assert!(!is_html_page("Use <b>bold</b> here."));
        assert_eq!(HtmlAsText.format("t", &json!({"html": "<html>"})), None);
        assert_eq!(
            AsIs.format("t", &json!("<html><body>x</body></html>")),
            None
        );
    }

    #[test]
    fn a_page_nested_past_any_real_one_is_left_as_it_is() {
        let nested = |depth: usize| {
            format!(
                "<!doctype html><html><body>{}x{}</body></html>",
                "<div>".repeat(depth),
                "</div>".repeat(depth)
            )
        };
        assert_eq!(HtmlAsText.format("t", &json!(nested(100_000))), None);
        assert!(HtmlAsText.format("t", &json!(nested(100))).is_some());
        // Void and self-closing elements, comments and closed elements do not count.
        let flat = format!(
            "<!doctype html><html><body>{}<!-- x --><p>a</p></body></html>",
            "<br><img src=x><x-y/>".repeat(2_000)
        );
        assert!(!nesting_over(&flat, 8));
        assert!(nesting_over(&nested(9), 8));
    }
}
