//! A record of LM calls and a printer in the style of DSPy's `inspect_history`.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::media::ContentPart;

use super::{Capabilities, Completion, Lm, LmError, LmRequest, Message, StreamEvent, Usage};

/// One recorded LM call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The model that answered.
    pub model: String,
    /// The messages sent.
    pub messages: Vec<Message>,
    /// The whole request (messages, options, tools, ..).
    pub request: LmRequest,
    /// What the model answered.
    pub completion: Completion,
    /// What the call spent (a cache hit spends nothing and counts one hit).
    pub usage: Usage,
    /// When the answer arrived.
    pub timestamp: SystemTime,
}

impl CallRecord {
    /// The timestamp as ISO 8601 in UTC with microseconds, e.g. `2026-11-03T09:15:02.123456Z`.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use signet::lm::{Completion, CallRecord, LmRequest};
    /// let entry = CallRecord {
    ///     model: "m".into(),
    ///     messages: vec![],
    ///     request: LmRequest::default(),
    ///     completion: Completion::text("x"),
    ///     usage: Default::default(),
    ///     timestamp: UNIX_EPOCH + Duration::from_micros(951_782_400_000_001),
    /// };
    /// assert_eq!(entry.timestamp_string(), "2000-02-29T00:00:00.000001Z");
    /// ```
    pub fn timestamp_string(&self) -> String {
        let since = self
            .timestamp
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let secs = since.as_secs();
        let (days, rest) = (secs / 86_400, secs % 86_400);
        let (year, month, day) = civil_from_days(days);
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
            rest / 3600,
            rest % 3600 / 60,
            rest % 60,
            since.subsec_micros()
        )
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// The last calls made through an LM, oldest first, bounded by count and by size (the oldest
/// entries are dropped beyond the [capacity](CallHistory::with_capacity) and beyond
/// [`max_bytes`](CallHistory::with_max_bytes)). Successful calls only, cache hits included.
///
/// [`render`](CallHistory::render) prints the last `n` calls the way Python's
/// `dspy.inspect_history(n)` does: a timestamp, each message under `<Role> message:`, then
/// `Response:` (and `Tool calls:`).
///
/// ```
/// use signet::lm::{Completion, CallHistory, LmRequest, Message};
///
/// let history = CallHistory::new();
/// let request = LmRequest::new(vec![Message::system("Be brief."), Message::user("Capital of France?")]);
/// history.record("gpt-4o-mini", &request, &Completion::text("Paris"));
/// assert_eq!(history.len(), 1);
/// let printed = history.render(1);
/// assert!(printed.contains("System message:\n\nBe brief.\n\n\n"));
/// assert!(printed.contains("User message:\n\nCapital of France?\n\n\n"));
/// assert!(printed.ends_with("Response:\n\nParis\n"));
/// ```
#[derive(Debug)]
pub struct CallHistory {
    entries: Mutex<Kept>,
    capacity: usize,
    max_bytes: usize,
}

/// The kept entries, each with its estimated size, and their total.
#[derive(Debug, Default)]
struct Kept {
    entries: VecDeque<(usize, CallRecord)>,
    bytes: usize,
}

impl Default for CallHistory {
    fn default() -> Self {
        CallHistory::with_capacity(CallHistory::DEFAULT_CAPACITY)
    }
}

impl CallHistory {
    /// How many calls a [`CallHistory::new`] keeps.
    pub const DEFAULT_CAPACITY: usize = 1000;

    /// How many bytes of calls a history keeps unless told otherwise: 64 MiB.
    pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

    /// An empty history keeping the last [`DEFAULT_CAPACITY`](CallHistory::DEFAULT_CAPACITY) calls.
    pub fn new() -> CallHistory {
        CallHistory::default()
    }

    /// An empty history keeping the last `capacity` calls (0 keeps none).
    pub fn with_capacity(capacity: usize) -> CallHistory {
        CallHistory {
            entries: Mutex::new(Kept::default()),
            capacity,
            max_bytes: CallHistory::DEFAULT_MAX_BYTES,
        }
    }

    /// Keeps at most `bytes` bytes of calls (default
    /// [`DEFAULT_MAX_BYTES`](CallHistory::DEFAULT_MAX_BYTES)), estimated as the text of the
    /// messages (kept twice: in [`CallRecord::messages`] and [`CallRecord::request`]), the tools'
    /// JSON and the reply: the oldest entries are dropped to make room, and a call larger than
    /// the whole budget is not kept.
    ///
    /// ```
    /// use signet::lm::{CallHistory, Completion, LmRequest, Message};
    /// let history = CallHistory::new().with_max_bytes(1_000);
    /// let big = LmRequest::new(vec![Message::user("x".repeat(2_000))]);
    /// history.record("m", &big, &Completion::text("ok"));
    /// assert!(history.is_empty());
    /// ```
    pub fn with_max_bytes(mut self, bytes: usize) -> CallHistory {
        self.max_bytes = bytes;
        self
    }

    /// How many calls it keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many bytes of calls it keeps (see [`with_max_bytes`](Self::with_max_bytes)).
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Records a call to `model`, stamped now; the model is the one that answered when the
    /// completion names it (a [`FallbackLm`](crate::lm::FallbackLm)'s choice).
    pub fn record(&self, model: &str, request: &LmRequest, completion: &Completion) {
        let model = completion.model.as_deref().unwrap_or(model);
        if self.capacity == 0 {
            return;
        }
        let size = record_size(request, completion);
        if size > self.max_bytes {
            return;
        }
        let entry = CallRecord {
            model: model.to_owned(),
            messages: request.messages.clone(),
            request: request.clone(),
            completion: completion.clone(),
            usage: completion.usage,
            timestamp: SystemTime::now(),
        };
        let mut kept = self.lock();
        while kept.entries.len() >= self.capacity
            || kept.bytes.saturating_add(size) > self.max_bytes
        {
            let Some((dropped, _)) = kept.entries.pop_front() else {
                break;
            };
            kept.bytes -= dropped;
        }
        kept.bytes += size;
        kept.entries.push_back((size, entry));
    }

    /// Every kept entry, oldest first.
    pub fn entries(&self) -> Vec<CallRecord> {
        self.lock().entries.iter().map(|(_, e)| e.clone()).collect()
    }

    /// The last `n` entries, oldest first.
    pub fn last(&self, n: usize) -> Vec<CallRecord> {
        let kept = self.lock();
        let skip = kept.entries.len().saturating_sub(n);
        kept.entries
            .iter()
            .skip(skip)
            .map(|(_, e)| e.clone())
            .collect()
    }

    /// The number of kept entries.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.lock().entries.is_empty()
    }

    /// The estimated size of the kept entries, in bytes (see
    /// [`with_max_bytes`](Self::with_max_bytes)).
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        let mut kept = self.lock();
        kept.entries.clear();
        kept.bytes = 0;
    }

    /// The usage of every kept call, added up.
    pub fn total_usage(&self) -> Usage {
        let mut total = Usage::default();
        for (_, entry) in self.lock().entries.iter() {
            total += entry.usage;
        }
        total
    }

    /// The last `n` calls as text, laid out like `dspy.inspect_history(n)` (no colours): from the
    /// first call's timestamp to a single final newline, without the blank lines DSPy prints
    /// around the calls (empty when there are none). [`render_history`] keeps DSPy's padding.
    ///
    /// ```
    /// use signet::lm::{CallHistory, Completion, LmRequest, Message};
    /// let history = CallHistory::new();
    /// history.record("m", &LmRequest::new(vec![Message::user("Hi!")]), &Completion::text("Hello."));
    /// let text = history.render(1);
    /// assert!(text.starts_with('[')); // the timestamp, `[2026-11-03T09:15:02.123456Z]`
    /// assert!(text.ends_with("Response:\n\nHello.\n"));
    /// assert_eq!(CallHistory::new().render(1), "");
    /// ```
    pub fn render(&self, n: usize) -> String {
        let text = render_history(&self.last(n), false);
        let calls = text.trim_matches('\n');
        if calls.is_empty() {
            String::new()
        } else {
            format!("{calls}\n")
        }
    }

    /// Prints the last `n` calls to standard output with ANSI colours, like
    /// `dspy.inspect_history(n)`.
    pub fn inspect(&self, n: usize) {
        print!("{}", render_history(&self.last(n), true));
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The estimated size of a call's record: its messages twice (as [`CallRecord::messages`] and in
/// [`CallRecord::request`]), the tools' JSON, and the reply.
fn record_size(request: &LmRequest, completion: &Completion) -> usize {
    let calls = |calls: &[super::ToolCall]| -> usize {
        calls
            .iter()
            .map(|c| c.id.len() + c.name.len() + c.arguments.len())
            .sum()
    };
    let messages: usize = request
        .messages
        .iter()
        .map(|m| m.content.wire_len() + calls(&m.tool_calls) + 64)
        .sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.to_value().to_string().len())
        .sum();
    let reply = completion.text.as_ref().map_or(0, String::len)
        + completion.reasoning.as_ref().map_or(0, String::len)
        + calls(&completion.tool_calls);
    messages
        .saturating_mul(2)
        .saturating_add(tools)
        .saturating_add(reply)
        .saturating_add(256)
}

/// Renders entries the way DSPy's `pretty_print_history` does, with or without ANSI colours.
///
/// ```
/// use signet::lm::{Completion, CallHistory, LmRequest, Message, ToolCall, render_history};
/// let history = CallHistory::new();
/// let call = ToolCall::new("c1", "add", r#"{"a":1}"#);
/// history.record("m", &LmRequest::new(vec![Message::user("add")]), &Completion::tool_calls(vec![call]));
/// let text = render_history(&history.entries(), false);
/// assert!(text.ends_with("Tool calls:\n\nadd: {\"a\":1}\n\n\n\n\n\n"));
/// ```
pub fn render_history(entries: &[CallRecord], colors: bool) -> String {
    let paint = |code: &str, text: &str| {
        if colors {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    };
    let mut out = String::new();
    for entry in entries {
        out.push_str("\n\n\n\n");
        let _ = write!(
            out,
            "{}\n\n",
            paint("34", &format!("[{}]", entry.timestamp_string()))
        );
        for message in &entry.messages {
            let role = match message.role {
                super::Role::System => "System",
                super::Role::User => "User",
                super::Role::Assistant => "Assistant",
                super::Role::Tool => "Tool",
            };
            let _ = write!(out, "{}\n\n", paint("31", &format!("{role} message:")));
            for part in message.content.parts().iter() {
                match part {
                    ContentPart::Text(text) => {
                        let _ = writeln!(out, "{}", text.trim());
                    }
                    ContentPart::Image(image) => {
                        let shown = match image.url().split_once("base64,") {
                            Some((head, data)) => {
                                format!("<{head}base64,<IMAGE BASE 64 ENCODED({})>", data.len())
                            }
                            None => format!("<image_url: {}>", image.url()),
                        };
                        let _ = writeln!(out, "{}", paint("34", &shown));
                    }
                    ContentPart::Audio(audio) => {
                        let shown = format!(
                            "<audio format='{}' base64-encoded, length={}>",
                            audio.format(),
                            audio.data().len()
                        );
                        let _ = writeln!(out, "{}", paint("34", &shown));
                    }
                }
            }
            for call in &message.tool_calls {
                let _ = writeln!(out, "{}: {}", call.name, call.arguments);
            }
            out.push_str("\n\n");
        }
        let completion = &entry.completion;
        if let Some(text) = completion.text.as_deref().filter(|t| !t.is_empty()) {
            let _ = write!(out, "{}\n\n", paint("31", "Response:"));
            let _ = write!(out, "{}\n\n", paint("32", text.trim()));
        }
        if !completion.tool_calls.is_empty() {
            let _ = write!(out, "{}\n\n", paint("31", "Tool calls:"));
            for call in &completion.tool_calls {
                let line = format!("{}: {}", call.name, call.arguments.trim());
                let _ = write!(out, "{}\n\n", paint("32", &line));
            }
        }
    }
    out.push_str("\n\n\n\n");
    out
}

/// Records every successful call of any [`Lm`] in a [`CallHistory`]: DSPy's `inspect_history`
/// for any model.
///
/// [`OpenAiLm`](super::OpenAiLm) keeps a history by itself; wrap any other LM in this — a
/// [`ScriptedLm`](crate::testing::ScriptedLm), an `Arc<dyn Lm>` such as the one
/// `signet_local::LlamaCpp::lm` returns, a [`ConstrainedToolCalls`](super::ConstrainedToolCalls).
/// [`wrap`](Self::wrap) gives it a history of its own, [`new`](Self::new) one you share. Keep the
/// wrapper in an `Arc` to give the module a handle and still inspect it:
///
/// ```
/// use std::sync::Arc;
/// use signet::lm::HistoryLm;
/// use signet::testing::ScriptedLm;
/// use signet::prelude::*;
///
/// /// Answer with one word.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: String }
///
/// let lm = Arc::new(HistoryLm::wrap(ScriptedLm::texts(["[[ ## answer ## ]]\nParis"])));
/// let predict = Predict::<Ask>::new().with_lm(lm.clone());
/// predict.call_blocking(AskInput { question: "Capital of France?".into() })?;
/// lm.inspect_history(1); // prints the prompt and the reply, like dspy.inspect_history(1)
/// let text = lm.history().render(1);
/// assert!(text.contains("Capital of France?") && text.contains("Response:\n\n[[ ## answer ## ]]\nParis"));
/// # Ok::<(), signet::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct HistoryLm<L> {
    inner: L,
    history: Arc<CallHistory>,
}

impl<L: Lm> HistoryLm<L> {
    /// Wraps `inner`, recording its calls in `history` (shared with other LMs or kept by you).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use signet::lm::{CallHistory, HistoryLm, Lm, LmRequest, Message};
    /// use signet::testing::ScriptedLm;
    ///
    /// let history = Arc::new(CallHistory::new());
    /// let lm = HistoryLm::new(ScriptedLm::texts(["hi"]), history.clone());
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// lm.complete(&LmRequest::new(vec![Message::user("hello")])).await.unwrap();
    /// # });
    /// assert_eq!(history.entries()[0].messages[0].content, "hello");
    /// assert_eq!(history.entries()[0].model, "scripted");
    /// ```
    pub fn new(inner: L, history: Arc<CallHistory>) -> HistoryLm<L> {
        HistoryLm { inner, history }
    }

    /// Wraps `inner`, recording its calls in a new history of its own (the last
    /// [`CallHistory::DEFAULT_CAPACITY`] calls; [`history`](Self::history) returns it).
    ///
    /// ```
    /// use signet::lm::{HistoryLm, Lm, LmRequest, Message};
    /// use signet::testing::ScriptedLm;
    /// let lm = HistoryLm::wrap(ScriptedLm::texts(["hi"]));
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// lm.complete(&LmRequest::new(vec![Message::user("hello")])).await.unwrap();
    /// # });
    /// assert_eq!(lm.history().len(), 1);
    /// ```
    pub fn wrap(inner: L) -> HistoryLm<L> {
        HistoryLm::new(inner, Arc::new(CallHistory::new()))
    }

    /// Prints the last `n` calls like Python's `dspy.inspect_history(n)` (with colours;
    /// `history().render(n)` for the text).
    pub fn inspect_history(&self, n: usize) {
        self.history.inspect(n);
    }

    /// The wrapped LM.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The history.
    pub fn history(&self) -> &Arc<CallHistory> {
        &self.history
    }
}

impl<L: Lm> Lm for HistoryLm<L> {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        async move {
            let completion = self.inner.complete(request).await?;
            self.history
                .record(self.inner.model(), request, &completion);
            Ok(completion)
        }
        .boxed()
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        recorded_stream(
            &self.history,
            self.inner.model(),
            request,
            self.inner.stream(request),
        )
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

/// `events`, with the final completion recorded in `history`.
pub(crate) fn recorded_stream<'a>(
    history: &'a CallHistory,
    model: &'a str,
    request: &'a LmRequest,
    events: BoxStream<'a, Result<StreamEvent, LmError>>,
) -> BoxStream<'a, Result<StreamEvent, LmError>> {
    super::on_done(events, move |completion| {
        history.record(model, request, completion)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::ToolCall;
    use std::time::Duration;

    #[test]
    fn renders_like_dspy() {
        let history = CallHistory::new();
        let request = LmRequest::new(vec![
            Message::system("  Sys  "),
            Message::user("Q"),
            Message::assistant_tool_calls(vec![ToolCall::new("c1", "f", "{}")]),
            Message::tool_result("c1", "42"),
        ]);
        history.record("m", &request, &Completion::text("\n A "));
        let mut entries = history.entries();
        entries[0].timestamp = UNIX_EPOCH + Duration::from_secs(86_400);
        let text = render_history(&entries, false);
        let expected = "\n\n\n\n[1970-01-02T00:00:00.000000Z]\n\n\
                        System message:\n\nSys\n\n\n\
                        User message:\n\nQ\n\n\n\
                        Assistant message:\n\n\nf: {}\n\n\n\
                        Tool message:\n\n42\n\n\n\
                        Response:\n\nA\n\n\
                        \n\n\n\n";
        assert_eq!(text, expected);
        let colored = render_history(&entries, true);
        assert!(colored.contains("\x1b[31mUser message:\x1b[0m\n\n"));
        assert!(colored.contains("\x1b[32mA\x1b[0m\n\n"));
        assert!(colored.contains("\x1b[34m[1970-01-02T00:00:00.000000Z]\x1b[0m"));
    }

    #[test]
    fn keeps_the_last_entries_within_capacity() {
        let history = CallHistory::with_capacity(2);
        for text in ["a", "b", "c"] {
            history.record("m", &LmRequest::default(), &Completion::text(text));
        }
        let texts: Vec<_> = history
            .entries()
            .into_iter()
            .filter_map(|e| e.completion.text)
            .collect();
        assert_eq!(texts, ["b", "c"]);
        assert_eq!(history.last(1)[0].completion.text.as_deref(), Some("c"));
        assert_eq!(history.last(10).len(), 2);
        assert!(CallHistory::with_capacity(0).is_empty());
        assert_eq!(render_history(&[], false), "\n\n\n\n");
    }

    #[test]
    fn render_starts_at_the_first_call_and_ends_with_one_newline() {
        let history = CallHistory::new();
        for text in ["a", "b"] {
            history.record(
                "m",
                &LmRequest::new(vec![Message::user("Q")]),
                &Completion::text(text),
            );
        }
        let text = history.render(2);
        assert!(
            text.starts_with("[19") || text.starts_with("[20"),
            "{text:?}"
        );
        assert!(
            text.ends_with("Response:\n\nb\n") && !text.ends_with("\n\n"),
            "{text:?}"
        );
        // The calls are apart as DSPy puts them; only the padding around them is gone.
        assert_eq!(
            text,
            format!(
                "{}\n",
                render_history(&history.last(2), false).trim_matches('\n')
            )
        );
        assert_eq!(CallHistory::new().render(3), "");
    }

    #[tokio::test]
    async fn a_wrapped_lm_records_into_its_own_history() {
        let lm = HistoryLm::wrap(crate::testing::ScriptedLm::texts(["hi"]));
        lm.complete(&LmRequest::new(vec![Message::user("hello")]))
            .await
            .unwrap();
        assert_eq!(lm.history().entries()[0].messages[0].content, "hello");
        assert!(lm.history().render(1).contains("Response:\n\nhi\n"));
    }

    #[test]
    fn dates_are_gregorian() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
    }
}
