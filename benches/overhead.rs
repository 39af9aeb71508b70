//! Framework overhead with a zero-latency LM: adapters (format + parse), tool dispatch, one Predict
//! call and one ReAct run (2 tool steps + extract). Run with `cargo bench --bench overhead`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;
use signet::adapter::{Adapter, ChatAdapter, Example, JsonAdapter, XmlAdapter};
use signet::lm::{Completion, Lm, LmError, LmRequest};
use signet::module::{Predict, ReAct};
use signet::{DynSignature, Signature, Tool, tool};

/// Answers from a fixed list, round and round: no latency, no bookkeeping.
struct CyclingLm {
    replies: Vec<Completion>,
    next: AtomicUsize,
}

impl CyclingLm {
    fn new(replies: &[&str]) -> Arc<CyclingLm> {
        Arc::new(CyclingLm {
            replies: replies.iter().map(|r| Completion::text(*r)).collect(),
            next: AtomicUsize::new(0),
        })
    }
}

impl Lm for CyclingLm {
    fn complete<'a>(&'a self, _: &'a LmRequest) -> BoxFuture<'a, Result<Completion, LmError>> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut reply = self.replies[n % self.replies.len()].clone();
        reply.usage.lm_calls = 1;
        futures::future::ready(Ok(reply)).boxed()
    }

    fn model(&self) -> &str {
        "cycling"
    }
}

/// Answer the question concisely.
#[derive(Signature)]
struct QA {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Add two integers.
#[tool(inline)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Add two integers on the blocking pool.
#[tool]
fn add_blocking(a: i64, b: i64) -> i64 {
    a + b
}

/// Look up a colour.
#[tool]
async fn lookup(name: String) -> String {
    if name == "Alice" {
        "blue".into()
    } else {
        "unknown".into()
    }
}

fn two_fields() -> (DynSignature, Example) {
    let sig = DynSignature::parse("question -> answer").unwrap();
    let inputs = json!({"question": "What is the capital of France?"})
        .as_object()
        .cloned()
        .unwrap();
    (sig, inputs)
}

fn ten_fields() -> (DynSignature, Example, String) {
    let sig = DynSignature::parse(
        "text, context: list[str], language -> count: int, ratio: float, ok: bool, names: list[str], \
         choice: Literal['a', 'b'], scores: dict[str, int], maybe: Optional[int]",
    )
    .unwrap();
    let inputs = json!({"text": "Alice and Bob.", "context": ["one", "two"], "language": "en"})
        .as_object()
        .cloned()
        .unwrap();
    let reply = "[[ ## count ## ]]\n2\n\n[[ ## ratio ## ]]\n0.5\n\n[[ ## ok ## ]]\nTrue\n\n[[ ## names ## ]]\n[\"Alice\", \"Bob\"]\n\n\
                 [[ ## choice ## ]]\na\n\n[[ ## scores ## ]]\n{\"Alice\": 3}\n\n[[ ## maybe ## ]]\nNone\n\n[[ ## completed ## ]]";
    (sig, inputs, reply.to_owned())
}

fn adapters(c: &mut Criterion) {
    let (sig, inputs) = two_fields();
    let chat = ChatAdapter::new();
    c.bench_function("chat/format/2 fields", |b| {
        b.iter(|| chat.format(&sig, &[], &inputs))
    });
    let reply = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]";
    c.bench_function("chat/parse/2 fields", |b| {
        b.iter(|| chat.parse(&sig, reply).unwrap())
    });

    let (sig10, inputs10, reply10) = ten_fields();
    c.bench_function("chat/format/10 fields", |b| {
        b.iter(|| chat.format(&sig10, &[], &inputs10))
    });
    c.bench_function("chat/parse/10 fields", |b| {
        b.iter(|| chat.parse(&sig10, &reply10).unwrap())
    });

    let json = JsonAdapter::new();
    c.bench_function("json/format/2 fields", |b| {
        b.iter(|| json.format(&sig, &[], &inputs))
    });
    c.bench_function("json/parse/2 fields", |b| {
        b.iter(|| json.parse(&sig, r#"{"answer": "Paris"}"#).unwrap())
    });

    let xml = XmlAdapter::new();
    c.bench_function("xml/format/2 fields", |b| {
        b.iter(|| xml.format(&sig, &[], &inputs))
    });
    c.bench_function("xml/parse/2 fields", |b| {
        b.iter(|| xml.parse(&sig, "<answer>\nParis\n</answer>").unwrap())
    });
}

fn tools(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let args = json!({"a": 2, "b": 3});
    c.bench_function("tool/validate+deserialize+dispatch (inline sync)", |b| {
        b.to_async(&runtime).iter(|| AddTool.call(args.clone()))
    });
    c.bench_function("tool/validate+deserialize+dispatch (blocking pool)", |b| {
        b.to_async(&runtime)
            .iter(|| AddBlockingTool.call(args.clone()))
    });
    let name = json!({"name": "Alice"});
    c.bench_function("tool/validate+deserialize+dispatch (async)", |b| {
        b.to_async(&runtime).iter(|| LookupTool.call(name.clone()))
    });
    let bad = json!({"a": "two", "b": 3});
    c.bench_function("tool/invalid arguments error", |b| {
        b.to_async(&runtime).iter(|| AddTool.call(bad.clone()))
    });
}

fn modules(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let predict = Predict::<QA>::new().with_lm(CyclingLm::new(&[
        "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]",
    ]));
    c.bench_function("predict/one call", |b| {
        b.to_async(&runtime).iter(|| {
            predict.call(QAInput {
                question: "What is the capital of France?".into(),
            })
        })
    });

    let step = |thought: &str, tool: &str, args: &str| {
        format!(
            "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n[[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
        )
    };
    let replies = [
        step("Add first.", "add", r#"{"a": 2, "b": 3}"#),
        step("Now the colour.", "lookup", r#"{"name": "Alice"}"#),
        step("Done.", "finish", "{}"),
        "[[ ## reasoning ## ]]\n5 and blue.\n\n[[ ## answer ## ]]\n5; blue\n\n[[ ## completed ## ]]".to_owned(),
    ];
    let replies: Vec<&str> = replies.iter().map(String::as_str).collect();
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(AddTool), Arc::new(LookupTool)];
    let react = ReAct::<QA>::new(tools).with_lm(CyclingLm::new(&replies));
    c.bench_function("react/2 tool steps + extract", |b| {
        b.to_async(&runtime).iter(|| {
            react.call(QAInput {
                question: "2 + 3, and Alice's colour?".into(),
            })
        })
    });
}

criterion_group!(benches, adapters, tools, modules);
criterion_main!(benches);
