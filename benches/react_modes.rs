//! ReAct's text mode (DSPy's `ReAct`) against its history mode (DSPy's `ReActV2`) on the same
//! task with a scripted model: look up the colours of N people, then answer. Prints, per mode and
//! N, the LM calls, the prompt tokens sent over the run, and the tokens each call adds beyond the
//! longest prefix it shares with the previous call (what a provider's prompt cache cannot reuse);
//! then times one run of each mode (N = 8) with criterion.
//!
//! `cargo bench --bench react_modes`; `docs/react.md` has the figures. Tokens are counted with
//! OpenAI's `o200k_base` encoding over each message's role, content and tool calls.

use std::sync::Arc;

use criterion::Criterion;
use signet::lm::LmRequest;
use signet::module::{ReAct, ReActMode};
use signet::testing::ScriptedLm;
use signet::{Signature, tool};
use tiktoken_rs::CoreBPE;

// Each bench binary uses part of the shared workloads.
#[allow(dead_code)]
mod workloads;

use workloads::CyclingLm;

/// Answer the question using the tools.
#[derive(Signature)]
struct Colours {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Look up a person's favourite colour.
#[tool(inline)]
fn colour(name: String) -> String {
    format!("{name} likes blue")
}

const PEOPLE: [&str; 16] = [
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory",
    "Niaj", "Olivia", "Peggy", "Rupert", "Sybil",
];

fn question(n: usize) -> ColoursInput {
    ColoursInput {
        question: format!(
            "What are the favourite colours of {}?",
            PEOPLE[..n].join(", ")
        ),
    }
}

fn answer(n: usize) -> String {
    format!("{} all like blue.", PEOPLE[..n].join(", "))
}

/// Text mode: one tool per step, `finish` without arguments, then the extractor (DSPy's loop).
fn text_replies(n: usize) -> Vec<String> {
    let step = |thought: &str, tool: &str, args: &str| {
        format!(
            "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
             [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
        )
    };
    let mut replies: Vec<String> = PEOPLE[..n]
        .iter()
        .map(|p| {
            step(
                &format!("Look up {p}."),
                "colour",
                &format!("{{\"name\": \"{p}\"}}"),
            )
        })
        .collect();
    replies.push(step("I have every colour.", "finish", "{}"));
    replies.push(format!(
        "[[ ## reasoning ## ]]\nEvery lookup said blue.\n\n[[ ## answer ## ]]\n{}\n\n[[ ## completed ## ]]",
        answer(n)
    ));
    replies
}

/// History mode: `per_turn` calls in each turn, then `submit` with the answer.
fn history_replies(n: usize, per_turn: usize) -> Vec<String> {
    let turn = |thought: &str, calls: Vec<String>| {
        format!(
            "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## tool_calls ## ]]\n{{\"tool_calls\": [{}]}}\n\n\
             [[ ## completed ## ]]",
            calls.join(", ")
        )
    };
    let mut replies: Vec<String> = PEOPLE[..n]
        .chunks(per_turn)
        .map(|people| {
            let calls = people
                .iter()
                .map(|p| format!("{{\"name\": \"colour\", \"args\": {{\"name\": \"{p}\"}}}}"))
                .collect();
            turn(&format!("Look up {}.", people.join(", ")), calls)
        })
        .collect();
    replies.push(turn(
        "I have every colour.",
        vec![format!(
            "{{\"name\": \"submit\", \"args\": {{\"answer\": \"{}\"}}}}",
            answer(n)
        )],
    ));
    replies
}

#[derive(Clone, Copy)]
enum Mode {
    Text,
    History,
    HistoryParallel,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Text => "text (ReAct)",
            Mode::History => "history (ReActV2), 1 call/turn",
            Mode::HistoryParallel => "history (ReActV2), all calls in 1 turn",
        }
    }

    fn replies(self, n: usize) -> Vec<String> {
        match self {
            Mode::Text => text_replies(n),
            Mode::History => history_replies(n, 1),
            Mode::HistoryParallel => history_replies(n, n),
        }
    }

    fn agent(self, lm: Arc<dyn signet::lm::Lm>) -> ReAct<Colours> {
        let mode = match self {
            Mode::Text => ReActMode::Text,
            Mode::History | Mode::HistoryParallel => ReActMode::History,
        };
        ReAct::<Colours>::new()
            .tool(ColourTool)
            .with_mode(mode)
            .with_lm(lm)
    }
}

/// A request as the tokens a provider sees (role, content and tool calls of each message).
fn tokens(bpe: &CoreBPE, request: &LmRequest) -> Vec<u32> {
    let mut text = String::new();
    for message in &request.messages {
        text.push_str(&format!("<{:?}>\n{}\n", message.role, message.content));
        for call in &message.tool_calls {
            text.push_str(&format!("{} {} {}\n", call.id, call.name, call.arguments));
        }
    }
    bpe.encode_with_special_tokens(&text)
}

/// One run's figures: LM calls, prompt tokens sent, tokens beyond the previous call's prefix.
fn measure(bpe: &CoreBPE, mode: Mode, n: usize) -> (usize, usize, usize) {
    let lm = Arc::new(ScriptedLm::texts(mode.replies(n)));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let out = runtime
        .block_on(mode.agent(lm.clone()).call(question(n)))
        .expect("the scripted run completes");
    assert_eq!(
        out.output.answer,
        answer(n),
        "{} answered wrongly",
        mode.label()
    );
    let requests = lm.requests();
    let (mut sent, mut new) = (0, 0);
    let mut previous: Vec<u32> = Vec::new();
    for request in &requests {
        let tokens = tokens(bpe, request);
        let shared = tokens
            .iter()
            .zip(&previous)
            .take_while(|(a, b)| a == b)
            .count();
        sent += tokens.len();
        new += tokens.len() - shared;
        previous = tokens;
    }
    (requests.len(), sent, new)
}

fn print_table() {
    let bpe = tiktoken_rs::o200k_base().expect("the o200k_base encoding loads");
    println!(
        "| mode | lookups | LM calls | prompt tokens sent | tokens not in the previous call's prefix |"
    );
    println!("|---|---:|---:|---:|---:|");
    for n in [1, 4, 8, 16] {
        for mode in [Mode::Text, Mode::History, Mode::HistoryParallel] {
            let (calls, sent, new) = measure(&bpe, mode, n);
            println!("| {} | {n} | {calls} | {sent} | {new} |", mode.label());
        }
    }
}

fn main() {
    print_table();
    let mut criterion = Criterion::default().configure_from_args();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut group = criterion.benchmark_group("react_modes");
    for mode in [Mode::Text, Mode::History, Mode::HistoryParallel] {
        let agent = mode.agent(CyclingLm::new(&mode.replies(8)));
        group.bench_function(format!("{} (8 lookups)", mode.label()), |b| {
            b.to_async(&runtime).iter(|| agent.call(question(8)))
        });
    }
    group.finish();
    criterion.final_summary();
}
