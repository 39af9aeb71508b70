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
        if !is_html_page(page) {
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
}
