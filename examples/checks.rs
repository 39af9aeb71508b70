//! Output checks with re-ask, offline on a scripted model: a typed check on `Predict`, an agent
//! whose answer states a figure no tool returned (refused, and the next turn offered the tool it
//! had not called), a reply that loops (stopped while it streams), and the fallback after the
//! last re-ask. `docs/howto-checks.md` explains each.
//!
//! ```text
//! cargo run --example checks
//! ```

use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use signet::lm::Capabilities;
use signet::module::check::{CheckFallback, Grounded, NoRepetition};
use signet::module::{ReActEvent, ReActMode};
use signet::prelude::*;
use signet::testing::{ScriptedLm, ScriptedReply};

/// Answer with the year only.
#[derive(Signature)]
struct Year {
    #[input]
    question: String,
    #[output]
    year: String,
}

/// Answer the traveller's question with the tools.
#[derive(Signature)]
struct Travel {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Convert an amount of euros to Norwegian kroner.
#[tool]
fn eur_to_nok(amount: f64) -> String {
    format!("In kroner: {amount} EUR is {:.2} NOK.", amount * 11.7)
}

/// Get tomorrow's forecast for a city.
#[tool]
fn forecast(city: String) -> String {
    format!("Tomorrow in {city}: 4 °C, light rain.")
}

fn chat(field: &str, value: &str) -> String {
    format!("[[ ## {field} ## ]]\n{value}\n\n[[ ## completed ## ]]")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Predict: a typed check, and the re-ask with its message in DSPy's `hint_` input.
    let lm = Arc::new(ScriptedLm::texts([
        chat("year", "in 1648"),
        chat("year", "1648"),
    ]));
    let year =
        Predict::<Year>::new()
            .with_lm(lm.clone())
            .with_check("a year", |_, out: &YearOutput| {
                match out.year.trim().parse::<u16>() {
                    Ok(_) => Ok(()),
                    Err(_) => Err(format!("`{}` is not a year: write four digits", out.year)),
                }
            });
    let question = YearInput {
        question: "When was the Peace of Westphalia signed?".into(),
    };
    let (out, prediction) = year.call_full(question, &Default::default()).await?;
    println!(
        "1. Predict: {:?} after {} re-ask (the second request's hint: {:?})",
        out.year,
        prediction.usage.reasks,
        lm.requests()[1].messages[1]
            .content
            .lines()
            .rev()
            .find(|l| l.contains("is not a year"))
            .unwrap_or_default()
    );

    // 2. An agent that answers with a figure no tool returned: refused, and its next turn is
    //    narrowed to the tool it did not call (and `finish`).
    let lm = Arc::new(
        ScriptedLm::replies([
            ScriptedReply::finish(json!({"answer": "300 EUR is 300.00 NOK."})),
            ScriptedReply::tool("eur_to_nok", json!({"amount": 300})),
            ScriptedReply::finish(json!({"answer": "300 EUR is 3510.00 NOK."})),
        ])
        .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let agent = ReAct::<Travel>::new()
        .tools([
            signet::tool::share(EurToNokTool),
            signet::tool::share(ForecastTool),
        ])
        .with_lm(lm.clone())
        .with_mode(ReActMode::Native)
        .with_output_check(Grounded::new())
        .with_output_check(NoRepetition::new());
    let input = TravelInput {
        question: "How much is 300 EUR in NOK?".into(),
    };
    let mut events = agent.stream(input.clone());
    println!("2. ReAct:");
    while let Some(event) = events.next().await {
        match event {
            ReActEvent::ToolCallStarted { name, args, .. } => println!("   call {name}({args})"),
            ReActEvent::CheckFailed { message, reask, .. } => {
                println!("   refused: {message} (asking again: {reask})")
            }
            ReActEvent::Done { output, usage, .. } => {
                println!("   answer: {:?} ({} re-ask)", output.answer, usage.reasks)
            }
            ReActEvent::Failed { error } => return Err(error.to_string().into()),
            _ => {}
        }
    }
    drop(events);
    let offered: Vec<String> = lm.requests()[1]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    println!("   the turn after the refusal offered: {offered:?}");

    // 3. A reply that loops is stopped while it streams, then asked for again.
    let looping = chat(
        "answer",
        &format!("Tomorrow: {}", "120 EUR is ".repeat(100)),
    );
    let lm = Arc::new(ScriptedLm::texts([
        looping,
        chat("answer", "Tomorrow: 4 °C."),
    ]));
    let qa = Predict::<Travel>::new()
        .with_lm(lm)
        .with_output_check(NoRepetition::new());
    let mut events = qa.stream(input.clone());
    let mut shown = 0;
    while let Some(event) = events.next().await {
        match event {
            ReActEvent::AnswerDelta { text, .. } => shown += text.len(),
            ReActEvent::CheckFailed { stopped_early, .. } => println!(
                "3. stopped while it streamed: {stopped_early}, after {shown} bytes (the loop was {} bytes)",
                "120 EUR is ".len() * 100
            ),
            ReActEvent::Done { output, .. } => println!("   then: {:?}", output.answer),
            _ => {}
        }
    }
    drop(events);

    // 4. Every answer refused: the fallback says what the tools returned.
    let lm = Arc::new(
        ScriptedLm::replies([
            ScriptedReply::tool("eur_to_nok", json!({"amount": 300})),
            ScriptedReply::finish(json!({"answer": "300 EUR is 999 NOK."})),
            ScriptedReply::finish(json!({"answer": "300 EUR is 998 NOK."})),
            ScriptedReply::finish(json!({"answer": "300 EUR is 997 NOK."})),
        ])
        .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let agent = ReAct::<Travel>::new()
        .tool(EurToNokTool)
        .with_lm(lm)
        .with_mode(ReActMode::Native)
        .with_output_check(Grounded::new())
        .with_check_fallback(CheckFallback::tool_results());
    let out = agent.call(input).await?;
    println!(
        "4. after {} refused answers, the fallback: {:?} (marked: {})",
        out.trajectory.refused_answers.len(),
        out.output.answer,
        out.trajectory.check_fallback
    );
    Ok(())
}
