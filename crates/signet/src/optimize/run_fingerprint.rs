//! What an optimizer run's saved steps depend on besides its settings, so that a run given the
//! directory of another run refuses it instead of replaying its scores: MIPROv2's log header and
//! GEPA's state carry this fingerprint.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::data::Example;
use crate::module::Module;

/// The fingerprint of a run of `student` on `trainset` and `valset`: a SHA-256 of the examples
/// (values and input keys, in order), the metric's name (`metric_name`, or the Rust type name of
/// the metric `M`: the function, or for a closure the function it is written in), a SHA-256 of
/// the program's saved JSON (instructions, signatures, demos), and the models — each predictor's
/// under `task`, then `others` (the optimizer's own models, by role). Hashes keep it one short
/// line.
pub(crate) fn of_run<M, P: Module>(
    student: &P,
    trainset: &[Example],
    valset: &[Example],
    metric_name: Option<&str>,
    others: impl IntoIterator<Item = (&'static str, Value)>,
) -> Value {
    let task: Vec<Option<String>> = student
        .named_predictors()
        .into_iter()
        .map(|(_, p)| {
            p.resolve(&crate::module::CallConfig::new())
                .ok()
                .map(|r| r.lm.model().to_owned())
        })
        .collect();
    let mut models = Map::new();
    models.insert("task".to_owned(), json!(task));
    models.extend(
        others
            .into_iter()
            .map(|(role, model)| (role.to_owned(), model)),
    );
    let metric = metric_name.map_or_else(|| std::any::type_name::<M>().to_owned(), str::to_owned);
    json!({
        "data": hash_examples(&[trainset, valset]),
        "metric": metric,
        "program": hex(&Sha256::digest(student.to_saved_json().as_bytes())),
        "models": models,
    })
}

/// Which parts of two fingerprints differ, in words: `its data, program differ`, with the
/// metric's and the models' values shown.
pub(crate) fn describe_difference(saved: &Map<String, Value>, now: &Map<String, Value>) -> String {
    let show = |v: Option<&Value>| v.map_or_else(|| "nothing".to_owned(), Value::to_string);
    let parts: Vec<&str> = ["data", "metric", "program", "models"]
        .into_iter()
        .filter(|p| saved.get(*p) != now.get(*p))
        .collect();
    let what = match parts.as_slice() {
        [] => "its fingerprint differs".to_owned(),
        [one @ ("metric" | "program")] => format!("its {one} differs"),
        _ => format!("its {} differ", parts.join(", ")),
    };
    let detail: Vec<String> = ["metric", "models"]
        .into_iter()
        .filter(|p| parts.contains(p))
        .map(|p| {
            format!(
                "{p}: logged {}, now {}",
                show(saved.get(p)),
                show(now.get(p))
            )
        })
        .collect();
    if detail.is_empty() {
        what
    } else {
        format!("{what}; {}", detail.join("; "))
    }
}

/// A SHA-256 of each set's examples, set by set.
fn hash_examples(sets: &[&[Example]]) -> String {
    let mut hasher = Sha256::new();
    for set in sets {
        hasher.update((set.len() as u64).to_le_bytes());
        for example in set.iter() {
            let text = json!({"values": example, "inputs": example.input_keys()}).to_string();
            hasher.update((text.len() as u64).to_le_bytes());
            hasher.update(text.as_bytes());
        }
    }
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
