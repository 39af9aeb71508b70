//! Tool selection on a catalogue of 20 tools: what one step's prompt costs with every tool, and
//! with the few a first call picks. Counted with GPT-4o's tokenizer (exact, `tiktoken`'s
//! `o200k_base`); runs offline on a scripted model:
//!
//! ```text
//! cargo run --example tool_selection
//! ```

use std::sync::Arc;

use serde_json::{Value, json};
use signet::Tool;
use signet::lm::{LmRequest, count_prompt_tokens};
use signet::prelude::*;
use signet::testing::ScriptedLm;
use signet::tool::FnTool;

/// Answer the user's request about their work day using the tools.
#[derive(Signature)]
struct Assist {
    #[input]
    request: String,
    #[output]
    answer: String,
}

/// An argument: its name, JSON type and what it is.
type Arg = (&'static str, &'static str, &'static str);

/// An office assistant's catalogue: name, description, and its arguments.
const CATALOGUE: [(&str, &str, &[Arg]); 20] = [
    (
        "search_email",
        "Search the mailbox by sender, subject words and date range; returns message ids with their subject and date.",
        &[
            (
                "query",
                "string",
                "Words to look for in the subject or body.",
            ),
            ("from", "string", "Sender address or name."),
            ("since", "string", "ISO date of the oldest message."),
        ],
    ),
    (
        "read_email",
        "Read one message: headers, plain-text body and the names of its attachments.",
        &[("id", "string", "The message id from search_email.")],
    ),
    (
        "send_email",
        "Send a message to one or more recipients, with an optional copy list.",
        &[
            ("to", "string", "Comma-separated recipient addresses."),
            ("subject", "string", "The subject line."),
            ("body", "string", "The plain-text body."),
        ],
    ),
    (
        "list_events",
        "List calendar events between two dates, with their title, time, place and attendees.",
        &[
            ("start", "string", "ISO date-time of the window's start."),
            ("end", "string", "ISO date-time of the window's end."),
        ],
    ),
    (
        "create_event",
        "Create a calendar event and invite attendees; returns the event id.",
        &[
            ("title", "string", "The event's title."),
            ("start", "string", "ISO date-time it starts."),
            ("minutes", "integer", "How long it lasts."),
            (
                "attendees",
                "string",
                "Comma-separated addresses to invite.",
            ),
        ],
    ),
    (
        "cancel_event",
        "Cancel a calendar event and notify its attendees.",
        &[
            ("id", "string", "The event id."),
            ("note", "string", "A note to the attendees."),
        ],
    ),
    (
        "find_free_time",
        "Find slots when every listed person is free within working hours.",
        &[
            ("people", "string", "Comma-separated addresses."),
            ("minutes", "integer", "Length of the slot."),
            ("within_days", "integer", "How many days ahead to look."),
        ],
    ),
    (
        "search_files",
        "Search the shared drive by file name and content; returns paths, owners and modification dates.",
        &[
            ("query", "string", "Words to look for."),
            ("folder", "string", "Limit the search to this folder."),
        ],
    ),
    (
        "read_file",
        "Read a text document or spreadsheet from the shared drive as plain text (first 20,000 characters).",
        &[("path", "string", "The file's path.")],
    ),
    (
        "write_file",
        "Create or replace a text document on the shared drive.",
        &[
            ("path", "string", "The file's path."),
            ("text", "string", "The document's content."),
        ],
    ),
    (
        "share_file",
        "Share a file with people, with view or edit rights.",
        &[
            ("path", "string", "The file's path."),
            ("people", "string", "Comma-separated addresses."),
            ("edit", "boolean", "Whether they may edit it."),
        ],
    ),
    (
        "create_task",
        "Add a task to the user's task list with a due date and priority.",
        &[
            ("title", "string", "What to do."),
            ("due", "string", "ISO date it is due."),
            ("priority", "integer", "1 (highest) to 4."),
        ],
    ),
    (
        "list_tasks",
        "List open tasks, optionally only those due before a date.",
        &[("due_before", "string", "ISO date; tasks due before it.")],
    ),
    (
        "complete_task",
        "Mark a task as done.",
        &[("id", "string", "The task id.")],
    ),
    (
        "lookup_contact",
        "Find a colleague in the company directory: email, phone, team, manager and office.",
        &[("name", "string", "Part of the person's name.")],
    ),
    (
        "post_message",
        "Post a message to a team chat channel.",
        &[
            ("channel", "string", "The channel's name."),
            ("text", "string", "The message."),
        ],
    ),
    (
        "read_channel",
        "Read the latest messages of a team chat channel.",
        &[
            ("channel", "string", "The channel's name."),
            ("limit", "integer", "How many messages."),
        ],
    ),
    (
        "book_room",
        "Book a meeting room for a time slot; returns the booking.",
        &[
            ("room", "string", "The room's name."),
            ("start", "string", "ISO date-time."),
            ("minutes", "integer", "How long."),
        ],
    ),
    (
        "expense_report",
        "File an expense with its amount, currency, category and receipt file.",
        &[
            ("amount", "number", "The amount."),
            ("currency", "string", "ISO currency code."),
            ("category", "string", "travel, meals, equipment or other."),
            ("receipt", "string", "Path of the receipt's scan."),
        ],
    ),
    (
        "weather",
        "Today's and tomorrow's weather for a city: temperature, rain and wind.",
        &[("city", "string", "The city's name.")],
    ),
];

fn catalogue() -> Vec<Arc<dyn Tool>> {
    CATALOGUE
        .iter()
        .map(|(name, description, args)| {
            let properties: serde_json::Map<String, Value> = args
                .iter()
                .map(|(arg, kind, what)| {
                    (
                        (*arg).to_owned(),
                        json!({"type": kind, "description": what}),
                    )
                })
                .collect();
            let required: Vec<&str> = args.iter().map(|(arg, ..)| *arg).collect();
            let schema = json!({"type": "object", "properties": properties, "required": required});
            signet::tool::share(
                FnTool::builder(*name)
                    .description(*description)
                    .schema(schema)
                    .sync_fn(|_| Ok::<_, String>(json!("ok"))),
            )
        })
        .collect()
}

fn tokens(request: &LmRequest) -> usize {
    count_prompt_tokens("gpt-4o", &request.messages, &request.tools).tokens
}

fn finish() -> String {
    "[[ ## next_thought ## ]]\nDone.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n\
     [[ ## next_tool_args ## ]]\n{\"answer\": \"Booked.\"}\n\n[[ ## completed ## ]]"
        .to_owned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let request = AssistInput {
        request: "Find a free hour with Ana tomorrow, book a room and invite her.".into(),
    };

    // Every tool in every step: selection off.
    let all = Arc::new(ScriptedLm::texts([finish()]));
    ReAct::<Assist>::new()
        .tools(catalogue())
        .with_mode(ReActMode::Text)
        .with_tool_selection_threshold(usize::MAX)
        .with_lm(all.clone())
        .call(AssistInput { ..request.clone() })
        .await?;
    let every_tool = tokens(&all.requests()[0]);

    // Selection (20 tools > the threshold of 12): a first call picks, each step shows the pick.
    let picked = Arc::new(ScriptedLm::texts([
        r#"{"tools": ["find_free_time", "book_room", "create_event", "lookup_contact"]}"#
            .to_owned(),
        finish(),
    ]));
    let out = ReAct::<Assist>::new()
        .tools(catalogue())
        .with_mode(ReActMode::Text)
        .with_lm(picked.clone())
        .call(request)
        .await?;
    let requests = picked.requests();
    let (selection, selected_step) = (tokens(&requests[0]), tokens(&requests[1]));

    println!("answer: {}", out.output.answer);
    println!("tokens of one step's prompt (gpt-4o, exact):");
    println!("  every tool (20):            {every_tool}");
    println!("  the 4 tools selected:       {selected_step}");
    println!("  the selection call (once):  {selection}");
    println!(
        "  saved per step: {} ({:.0}%); selection pays for itself from step {}",
        every_tool - selected_step,
        100.0 * (every_tool - selected_step) as f64 / every_tool as f64,
        selection.div_ceil(every_tool - selected_step)
    );
    Ok(())
}
