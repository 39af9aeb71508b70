//! Every default of a ReAct agent and of the adapters, classified: DSPy 3.4.1's own, or a difference named in
//! docs/dspy.md ("Deliberate differences"). A default that changes, or a setting added without
//! being classified here, fails this test, so the list of differences cannot fall behind the code.

use signet::module::DynReAct;

/// One setting of the agent (a field of its `Debug`, or of its `limits`).
struct Default {
    /// The setting, as `Debug` names it.
    setting: &'static str,
    /// Its default, as `Debug` prints it.
    value: &'static str,
    /// `None`: DSPy's default. `Some(heading)`: a difference, named under this bold heading of
    /// docs/dspy.md (or, for settings DSPy does not have, the paragraph that introduces them).
    differs: Option<&'static str>,
}

const fn same(setting: &'static str, value: &'static str) -> Default {
    Default {
        setting,
        value,
        differs: None,
    }
}

const fn differs(setting: &'static str, value: &'static str, heading: &'static str) -> Default {
    Default {
        setting,
        value,
        differs: Some(heading),
    }
}

const AGENT: &[Default] = &[
    same("signature", "\"StringSignature\""),
    same("tools", "[]"),
    same("limits", "Limits { .. }"),
    same("truncation", "DropOldest"),
    differs(
        "mode",
        "Auto",
        "**Native tool calls in ReAct, in parallel.**",
    ),
    differs(
        "approver",
        "None",
        "**A tool that needs approval cannot be called past it.**",
    ),
    differs(
        "selection_threshold",
        "12",
        "**Tool selection keeps tuned instructions.**",
    ),
    differs(
        "selection_limit",
        "6",
        "**Tool selection keeps tuned instructions.**",
    ),
    differs(
        "answer_fallback",
        "true",
        "**The answer falls back to the last tool result.**",
    ),
    differs(
        "formatter",
        "HtmlAsText",
        "**HTML observations are shown as text.**",
    ),
    same("require_tool_calls", "false"),
    same("finish_on_last_turn", "false"),
    differs("state_key", "None", "**More in the agent.**"),
    differs("checks", "None", "**More in the agent.**"),
];

const LIMITS: &[Default] = &[
    same("max_iters", "20"),
    differs("max_lm_calls", "100", "**Every run is bounded.**"),
    differs("tool_timeout", "Some(60s)", "**Every run is bounded.**"),
    differs(
        "max_observation_chars",
        "20000",
        "**Every run is bounded.**",
    ),
    differs(
        "max_answer_observation_chars",
        "2000",
        "**The answer step reads long results cut shorter.**",
    ),
    differs(
        "max_concurrent_tools",
        "8",
        "**Native tool calls in ReAct, in parallel.**",
    ),
    differs("max_tool_calls_per_turn", "16", "**Every run is bounded.**"),
    differs(
        "max_kept_observation_bytes",
        "1048576",
        "**The answer falls back to the last tool result.**",
    ),
    same("context_window", "None"),
    differs("budget", "Budget { .. }", "**Every run is bounded.**"),
];

// DSPy 3.4.1's `ChatAdapter(use_native_function_calling=False, use_json_adapter_fallback=True)`,
// `XMLAdapter` (the same) and `JSONAdapter(use_native_function_calling=True)`; the JSON adapter's
// caps and constraint are Signet's own, off by default (DSPy's behaviour).
const CHAT: &[Default] = &[
    same("json_fallback", "true"),
    same("native_function_calling", "false"),
    same("parallel_tool_calls", "None"),
];

const JSON: &[Default] = &[
    same("native_function_calling", "true"),
    same("constrained", "false"),
    same("parallel_tool_calls", "None"),
    same("max_tool_calls", "None"),
    same("max_string_chars", "None"),
    same("max_array_items", "None"),
];

/// The top-level `name: value` pairs of a `Debug` struct (`Name { a: 1, b: [2, 3] }`), nested
/// values as written.
fn fields(debug: &str) -> Vec<(String, String)> {
    let inner = debug
        .split_once(" { ")
        .and_then(|(_, rest)| rest.rsplit_once(" }"))
        .map(|(inner, _)| inner)
        .unwrap_or_default();
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    let bytes = inner.as_bytes();
    let mut in_string = false;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => in_string = !in_string,
            b'{' | b'[' | b'(' if !in_string => depth += 1,
            b'}' | b']' | b')' if !in_string => depth -= 1,
            b',' if !in_string && depth == 0 => {
                out.push(inner[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(inner[start..].trim().to_owned());
    out.into_iter()
        .filter(|part| !part.is_empty() && part != "..")
        .filter_map(|part| {
            part.split_once(": ")
                .map(|(name, value)| (name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// A nested struct's value as the table writes it: its name and `{ .. }`.
fn shape(value: &str) -> String {
    match value.split_once(" {") {
        Some((name, _)) if !name.contains(' ') => format!("{name} {{ .. }}"),
        _ => value.to_owned(),
    }
}

fn check(what: &str, debug: &str, table: &[Default], docs: &str, problems: &mut Vec<String>) {
    let found = fields(debug);
    for (name, value) in &found {
        match table.iter().find(|d| d.setting == name) {
            None => problems.push(format!(
                "{what}.{name} (default {value}) is not classified: add it to this test, as DSPy's \
                 default or as a difference named in docs/dspy.md"
            )),
            Some(d) if d.value != shape(value) => problems.push(format!(
                "{what}.{name}: the default is now {value}, the table says {}: check it against \
                 DSPy and docs/dspy.md, then update the table",
                d.value
            )),
            Some(_) => {}
        }
    }
    for d in table {
        if !found.iter().any(|(name, _)| name == d.setting) {
            problems.push(format!("{what}.{}: no such setting any more", d.setting));
        }
        if let Some(heading) = d.differs
            && !docs.contains(heading)
        {
            problems.push(format!(
                "{what}.{}: docs/dspy.md has no paragraph {heading}",
                d.setting
            ));
        }
    }
}

#[test]
fn every_default_of_the_agent_is_dspys_or_a_named_difference() {
    let docs_path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/dspy.md");
    let docs = std::fs::read_to_string(docs_path).expect("docs/dspy.md");
    let agent = DynReAct::new("question -> answer".parse().unwrap());
    let debug = format!("{agent:?}");
    let limits = format!("{:?}", signet::module::Limits::default());
    let mut problems = Vec::new();
    check("DynReAct", &debug, AGENT, &docs, &mut problems);
    check("Limits", &limits, LIMITS, &docs, &mut problems);
    check(
        "ChatAdapter",
        &format!("{:?}", signet::adapter::ChatAdapter::default()),
        CHAT,
        &docs,
        &mut problems,
    );
    check(
        "XmlAdapter",
        &format!("{:?}", signet::adapter::XmlAdapter::default()),
        CHAT,
        &docs,
        &mut problems,
    );
    check(
        "JsonAdapter",
        &format!("{:?}", signet::adapter::JsonAdapter::default()),
        JSON,
        &docs,
        &mut problems,
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
