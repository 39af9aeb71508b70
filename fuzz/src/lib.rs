//! What the fuzz targets share: a signature with every kind of output field, a tool whose
//! arguments are nested, optional and enumerated, a small stack to run each input on, and a
//! generator of the deep and long replies libFuzzer would take hours to grow by mutation.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use signet::{Signature, tool};

/// A choice.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mood {
    /// Up.
    Happy,
    /// Down.
    Sad,
}

/// A nested value.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Point {
    /// Across.
    pub x: f64,
    /// Down.
    pub y: i32,
    /// A label.
    pub label: Option<String>,
}

/// Every kind of output field.
#[derive(Signature)]
pub struct Everything {
    /// The question.
    #[input]
    pub question: String,
    /// Text.
    #[output]
    pub text: String,
    /// An integer.
    #[output]
    pub count: i64,
    /// A small unsigned integer.
    #[output]
    pub byte: u8,
    /// A float.
    #[output]
    pub ratio: f64,
    /// A flag.
    #[output]
    pub flag: bool,
    /// A list.
    #[output]
    pub items: Vec<String>,
    /// An optional value.
    #[output]
    pub maybe: Option<i32>,
    /// An enum.
    #[output]
    pub mood: Mood,
    /// A nested object.
    #[output]
    pub point: Point,
    /// A mapping.
    #[output]
    pub scores: BTreeMap<String, f64>,
}

/// A tool with nested, optional, enumerated and integer-width arguments.
#[tool]
pub fn plot(
    /// Where.
    at: Point,
    /// How it feels.
    mood: Mood,
    /// How many times.
    times: u16,
    /// Extra points.
    more: Vec<Point>,
    /// An optional note.
    note: Option<String>,
) -> String {
    format!("{at:?} {mood:?} {times} {} {note:?}", more.len())
}

/// The stack every target runs its input on: half of tokio's 2 MiB worker stack under
/// AddressSanitizer (cargo-fuzz's default), whose redzones make frames about three times as
/// large, so about a sixth of it uninstrumented. A recursion that grows with the input
/// overflows here long before it could in a real worker; serde_json at its own 128-level limit
/// does not (at 256 KiB under ASan it did: a false alarm, found by `saved_state`).
pub const SMALL_STACK: usize = 1024 * 1024;

/// Runs `f` on a thread with a [`SMALL_STACK`]. A panic in `f` is a panic here (libFuzzer reports
/// it); a stack overflow aborts the process, which libFuzzer reports as a crash.
pub fn on_small_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .stack_size(SMALL_STACK)
            .spawn_scoped(scope, f)
            .expect("spawn a fuzzing thread");
        match handle.join() {
            Ok(value) => value,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// A reply built from a few bytes of fuzzer input: nesting up to 250,000 levels of any mix of
/// brackets, quotes and XML elements, strings up to 1 MB, torn or closed, wrapped in one of the
/// adapters' formats. Returns the reply and the adapter it is written for (0 Chat, 1 JSON, 2 XML).
pub fn deep_reply(data: &[u8]) -> (String, u8) {
    let byte = |i: usize| data.get(i).copied().unwrap_or(0);
    let adapter = byte(0) % 3;
    let depth = (usize::from(byte(1)) << 10 | usize::from(byte(2)) << 2) % 250_001;
    let long = (usize::from(byte(3)) << 12) % 1_000_001;
    let closed = byte(4) & 1 == 1;
    let field = ["items", "point", "scores", "text", "count"][usize::from(byte(5)) % 5];
    // The openers to cycle through, taken from the rest of the input.
    let alphabet: &[&str] = &["[", "{\"a\": ", "(", "{'a': ", "<item>", "[\"", "<point>"];
    let pattern: Vec<&str> = data
        .get(6..)
        .unwrap_or_default()
        .iter()
        .take(16)
        .map(|b| alphabet[usize::from(*b) % alphabet.len()])
        .collect();
    let pattern = if pattern.is_empty() {
        vec!["["]
    } else {
        pattern
    };
    let mut value = String::new();
    let mut closers = Vec::new();
    for level in 0..depth {
        let open = pattern[level % pattern.len()];
        value.push_str(open);
        closers.push(match open {
            "[" => "]".to_owned(),
            "(" => ")".to_owned(),
            "[\"" => "\"]".to_owned(),
            o if o.starts_with('{') => "}".to_owned(),
            o => o.replacen('<', "</", 1),
        });
    }
    value.push_str(&"x".repeat(long));
    if closed {
        while let Some(close) = closers.pop() {
            value.push_str(&close);
        }
    }
    let reply = match adapter {
        0 => format!("[[ ## {field} ## ]]\n{value}\n\n[[ ## completed ## ]]"),
        1 => format!("{{\"{field}\": {value}}}"),
        _ => format!("<{field}>{value}</{field}>"),
    };
    (reply, adapter)
}

/// How many times [`pay`] has run in this process.
pub static PAYMENTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A payment that needs approval: a run that calls it suspends.
#[tool(confirm)]
pub fn pay(
    /// Who gets the money.
    to: String,
    /// How much.
    amount: u32,
) -> String {
    PAYMENTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("paid {amount} to {to}")
}

/// Answer the question with the tools.
#[derive(Signature)]
pub struct Ask {
    /// The question.
    #[input]
    pub question: String,
    /// The answer.
    #[output]
    pub answer: String,
}
