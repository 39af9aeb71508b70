//! Saved programs in DSPy's `program.save("program.json")` format: each predictor's demos,
//! instructions and field descriptions, keyed by its path, so a program optimized in Python runs
//! here and one optimized here loads in Python.
//!
//! The rules are DSPy 3.4.1's:
//! * a lone predictor (a top-level `Predict`) is saved flat; every other program is an object
//!   keyed by predictor path (`predict`, `react`, `extract.predict`, `steps[0]`, `by_lang['fr']`)
//!   plus `metadata.dependency_versions`;
//! * per predictor: `traces`, `train`, `demos` (every key of every demo kept), `signature`
//!   (`instructions`, and `fields`: `{prefix, description}` for the inputs then the outputs),
//!   `fields` when the file has per-field decisions, and `lm`;
//! * loading reads each of the program's paths (a missing one is an error naming it; extra keys
//!   are ignored), applies field descriptions and prefixes **by position** as DSPy does, and
//!   changes nothing unless the whole file is valid;
//! * Signet adds one key DSPy does not have, [`TOOL_DESCRIPTIONS`], only when a ReAct tool is
//!   shown with another description than its own (DSPy ignores it when loading). Loading a file
//!   without it gives every tool its own description back.
//!
//! Field names, types, tools and the LM are not in the file: the program that loads it is built
//! by code, with the same shape. A saved `lm` is kept (and saved again) but never turned into an
//! LM — a file does not choose where requests go; set the LM in code. Nor what a server fetches:
//! a demo's image URL naming this machine or a private network is shown as text
//! ([`allow_private_urls`](crate::media::allow_private_urls)). Its `model` picks among the
//! models the code registered ([`configure_model`](super::configure_model)): a predictor with no
//! LM and no model hint of its own uses the one registered under that name, if any.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::DynPredict;
use super::react::DynReAct;
use crate::adapter::Fields;

/// Why a saved program could not be read, written or applied. Nothing is changed when loading
/// fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The file could not be read or written.
    #[error("cannot {action} {path}: {source}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not JSON.
    #[error("{origin} is not valid JSON: {message}")]
    Json {
        /// The file (or `the saved state`).
        origin: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A key the program needs is not in the file: a predictor path (the file comes from a
    /// program of another shape) or a key of a predictor's state.
    #[error("the saved program has no `{key}` (was it saved from a program of another shape?)")]
    Missing {
        /// The path of the missing key (`answer.predict`, `react.signature`).
        key: String,
    },
    /// A key holds the wrong kind of value.
    #[error("`{at}` in the saved program should be {expected}, but it is {found}")]
    Invalid {
        /// Where (`react.demos[2]`, `predict.signature.fields[1].prefix`).
        at: String,
        /// What was expected.
        expected: &'static str,
        /// What is there (shortened).
        found: String,
    },
    /// The file describes a tool the program does not have (under [`TOOL_DESCRIPTIONS`]).
    #[error(
        "the saved program describes the tool `{name}`, which this program does not have (was it saved from a program with other tools?)"
    )]
    UnknownTool {
        /// The tool's name in the file (`tools.search`, `agent.tools.search`).
        name: String,
    },
    /// The file uses a form DSPy itself no longer loads.
    #[error("`{at}`: {reason}")]
    Unsupported {
        /// Where.
        at: String,
        /// Why.
        reason: String,
    },
}

/// What a predictor keeps from a loaded file only to save it again: DSPy's `traces` and `train`
/// (always empty in practice), its per-field decisions, and the saved LM settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Carried {
    traces: Option<Value>,
    train: Option<Value>,
    decisions: Option<Value>,
    lm: Option<Value>,
    /// The content hash of the program this predictor was loaded with
    /// ([`Predictors::version`](super::Predictors::version)), which its spans carry.
    pub(crate) version: Option<std::sync::Arc<str>>,
}

/// The versions DSPy 3.4.1 on Python 3.11 writes, so that Python loads Signet's files without a
/// version warning.
const DEPENDENCY_VERSIONS: [(&str, &str); 3] = [
    ("python", "3.11"),
    ("dspy", "3.4.1"),
    ("cloudpickle", "3.1"),
];

/// LM settings DSPy drops from a loaded file unless told to trust it: they would send requests
/// (and keys) somewhere the file chooses.
const UNSAFE_LM_KEYS: [&str; 3] = ["api_base", "base_url", "model_list"];

impl DynPredict {
    /// This predictor's state in DSPy's format (`traces`, `train`, `demos`, `signature`,
    /// `fields` when the file had per-field decisions, `lm`).
    ///
    /// ```
    /// use signet::module::DynPredict;
    /// let mut qa = DynPredict::new("question -> answer".parse().unwrap());
    /// qa.set_instructions("Answer in one word.");
    /// let state = qa.state();
    /// assert_eq!(state["signature"]["instructions"], "Answer in one word.");
    /// assert_eq!(state["signature"]["fields"][1], serde_json::json!({"prefix": "Answer:", "description": "${answer}"}));
    /// ```
    pub fn state(&self) -> Value {
        let fields: Vec<Value> = self
            .signature
            .fields()
            .map(|f| json!({"prefix": f.prefix(), "description": f.saved_desc()}))
            .collect();
        let mut state = Map::new();
        let empty = || Value::Array(Vec::new());
        state.insert(
            "traces".into(),
            self.carried.traces.clone().unwrap_or_else(empty),
        );
        state.insert(
            "train".into(),
            self.carried.train.clone().unwrap_or_else(empty),
        );
        let media: Vec<&str> = self
            .signature
            .fields()
            .filter(|f| f.kind() == crate::signature::FieldKind::Media)
            .map(|f| f.name())
            .collect();
        let demo_state = |demo: &Fields| {
            let mut demo = demo.clone();
            for (name, value) in demo.iter_mut() {
                if media.contains(&name.as_str()) {
                    *value = crate::media::dspy_saved(value);
                }
            }
            Value::Object(demo)
        };
        state.insert(
            "demos".into(),
            Value::Array(self.demos.iter().map(demo_state).collect()),
        );
        if let Some(selection) = self.demo_selector.as_ref().and_then(|s| s.state()) {
            state.insert("demo_selection".into(), selection);
        }
        state.insert(
            "signature".into(),
            json!({"instructions": self.signature.instructions(), "fields": fields}),
        );
        if let Some(decisions) = &self.carried.decisions {
            state.insert("fields".into(), decisions.clone());
        }
        state.insert("lm".into(), self.carried.lm.clone().unwrap_or(Value::Null));
        Value::Object(state)
    }

    /// Applies a state saved by [`state`](Self::state) or by DSPy: demos, instructions, field
    /// descriptions and prefixes (by position). On an error nothing changes.
    pub fn restore(&mut self, state: &Value) -> Result<(), StateError> {
        let parsed = PredictorState::read("", state)?;
        parsed.apply(self);
        Ok(())
    }

    /// The LM settings a loaded file saved for this predictor (DSPy's `lm` state: model,
    /// temperature, ..), without `api_base`, `base_url` and `model_list`. Signet keeps them to save
    /// them again; it never builds an LM from a file.
    pub fn saved_lm(&self) -> Option<&Value> {
        self.carried.lm.as_ref()
    }

    /// The model a loaded file saved for this predictor (`lm.model`): when a model is registered
    /// under that name ([`configure_model`](super::configure_model)), a predictor with no LM and
    /// no hint of its own uses it.
    pub(super) fn saved_model(&self) -> Option<&str> {
        self.carried.lm.as_ref()?.get("model")?.as_str()
    }
}

/// One predictor's state, checked.
struct PredictorState {
    traces: Option<Value>,
    train: Option<Value>,
    demos: Option<Vec<Fields>>,
    demo_selection: Option<super::NearestDemos>,
    instructions: String,
    fields: Vec<(String, String)>,
    decisions: Option<Value>,
    lm: Option<Value>,
}

impl PredictorState {
    /// Reads the state at `at` (a predictor path, or empty for a flat file).
    fn read(at: &str, state: &Value) -> Result<PredictorState, StateError> {
        let key = |k: &str| {
            if at.is_empty() {
                k.to_owned()
            } else {
                format!("{at}.{k}")
            }
        };
        let object = state
            .as_object()
            .ok_or_else(|| invalid(at, "an object", state))?;
        if object.contains_key("extended_signature") {
            return Err(StateError::Unsupported {
                at: key("extended_signature"),
                reason: "files saved by DSPy 2.5 and older keep ChainOfThought's signature there; \
                         DSPy 2.6+ does not load them either — save the program again with a newer DSPy"
                    .into(),
            });
        }
        let signature = object.get("signature").ok_or_else(|| StateError::Missing {
            key: key("signature"),
        })?;
        let signature_at = key("signature");
        let signature = signature
            .as_object()
            .ok_or_else(|| invalid(&signature_at, "an object", signature))?;
        let instructions = match signature.get("instructions") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => {
                return Err(invalid(
                    &format!("{signature_at}.instructions"),
                    "a string",
                    other,
                ));
            }
            None => {
                return Err(StateError::Missing {
                    key: format!("{signature_at}.instructions"),
                });
            }
        };
        let fields_at = format!("{signature_at}.fields");
        let fields = match signature.get("fields") {
            Some(Value::Array(fields)) => fields
                .iter()
                .enumerate()
                .map(|(i, field)| {
                    let at = format!("{fields_at}[{i}]");
                    let text = |name: &str| match field.get(name) {
                        Some(Value::String(text)) => Ok(text.clone()),
                        Some(other) => Err(invalid(&format!("{at}.{name}"), "a string", other)),
                        None => Err(StateError::Missing {
                            key: format!("{at}.{name}"),
                        }),
                    };
                    Ok((text("prefix")?, text("description")?))
                })
                .collect::<Result<Vec<_>, StateError>>()?,
            Some(other) => return Err(invalid(&fields_at, "a list", other)),
            None => return Err(StateError::Missing { key: fields_at }),
        };
        let demos = match object.get("demos") {
            None => None,
            Some(Value::Array(demos)) => Some(
                demos
                    .iter()
                    .enumerate()
                    .map(|(i, demo)| match demo {
                        Value::Object(map) => Ok(map.clone()),
                        other => Err(invalid(
                            &format!("{}[{i}]", key("demos")),
                            "an object",
                            other,
                        )),
                    })
                    .collect::<Result<Vec<_>, StateError>>()?,
            ),
            Some(other) => return Err(invalid(&key("demos"), "a list", other)),
        };
        if let Some(model) = object
            .get("demo_selection")
            .and_then(|state| state.get("embedding"))
        {
            // The embedder is not saved: word overlap stands in until one is given again.
            tracing::warn!(
                predictor = at,
                embedding = %model,
                "the program was saved with demos selected by an embedder, which is not saved; \
                 they are selected by word overlap until the predictor is given an \
                 EmbeddingDemos again (EmbeddingDemos::from_state)"
            );
        }
        let demo_selection = match object.get("demo_selection") {
            None => None,
            Some(state) => Some(super::NearestDemos::from_state(state).ok_or_else(|| {
                invalid(
                    &key("demo_selection"),
                    "{\"nearest\": k, \"keys\": [..], \"most_similar_last\": bool}",
                    state,
                )
            })?),
        };
        let lm = match object.get("lm") {
            None => return Err(StateError::Missing { key: key("lm") }),
            Some(Value::Null) => None,
            Some(Value::Object(settings)) => Some(Value::Object(safe_lm_settings(at, settings))),
            Some(other) => return Err(invalid(&key("lm"), "an object or null", other)),
        };
        Ok(PredictorState {
            traces: object.get("traces").cloned(),
            train: object.get("train").cloned(),
            demos,
            demo_selection,
            instructions,
            fields,
            decisions: object.get("fields").cloned(),
            lm,
        })
    }

    fn apply(self, predictor: &mut DynPredict) {
        let count = predictor.signature.fields().count();
        if count != self.fields.len() {
            tracing::warn!(
                signature = predictor.signature.name(),
                fields = count,
                saved = self.fields.len(),
                "the saved program lists another number of fields than the signature has; \
                 descriptions and prefixes were applied by position, as DSPy applies them"
            );
        }
        predictor.set_instructions(self.instructions);
        predictor.signature.apply_saved_fields(
            self.fields
                .iter()
                .map(|(prefix, desc)| (prefix.as_str(), desc.as_str())),
        );
        if let Some(demos) = self.demos {
            predictor.demos = demos;
        }
        if let Some(selection) = self.demo_selection {
            predictor.demo_selector = Some(std::sync::Arc::new(selection));
        }
        predictor.carried = Carried {
            traces: self.traces,
            train: self.train,
            decisions: self.decisions,
            lm: self.lm,
            version: None,
        };
    }
}

/// The LM settings without the keys DSPy drops from untrusted files (with DSPy's warning).
fn safe_lm_settings(at: &str, settings: &Map<String, Value>) -> Map<String, Value> {
    let dropped: Vec<&str> = UNSAFE_LM_KEYS
        .into_iter()
        .filter(|k| settings.contains_key(*k))
        .collect();
    if !dropped.is_empty() {
        tracing::warn!(
            predictor = at,
            ?dropped,
            "ignoring LM settings that choose where requests go in a loaded program"
        );
    }
    settings
        .iter()
        .filter(|(k, _)| !UNSAFE_LM_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn invalid(at: &str, expected: &'static str, found: &Value) -> StateError {
    let mut text = found.to_string();
    if text.len() > 80 {
        let cut = (0..=77)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push_str("...");
    }
    StateError::Invalid {
        at: if at.is_empty() {
            "(the whole file)".to_owned()
        } else {
            at.to_owned()
        },
        expected,
        found: text,
    }
}

/// What saving and loading read and change of a program: its predictors and ReAct loops, each with
/// its path. Every `Predictors` is one (module `program`).
pub(super) trait Parts {
    /// Each predictor with its path.
    fn predictors(&self) -> Vec<(String, &DynPredict)>;
    /// Each predictor with its path, to change.
    fn predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)>;
    /// Each ReAct loop with its path.
    fn react_loops(&self) -> Vec<(String, &DynReAct)>;
    /// Each ReAct loop with its path, to change.
    fn react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)>;
}

/// Whether a program is saved flat: DSPy saves a lone top-level `Predict` without a key.
fn is_flat<P>(predictors: &[(String, P)]) -> bool {
    matches!(predictors, [(name, _)] if name == "self")
}

/// The state of every predictor of `predictors`, in DSPy's layout (see the [module docs](self)).
pub(super) fn dump<P: Parts + ?Sized>(program: &P) -> Value {
    let predictors = program.predictors();
    let mut state = if is_flat(&predictors) {
        match predictors[0].1.state() {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    } else {
        predictors
            .iter()
            .map(|(path, predictor)| (path.clone(), predictor.state()))
            .collect()
    };
    let changed: Map<String, Value> = program
        .react_loops()
        .into_iter()
        .flat_map(|(path, core)| {
            core.changed_tool_descriptions()
                .into_iter()
                .map(|(tool, text)| (tool_component(&path, tool), json!(text)))
                .collect::<Vec<_>>()
        })
        .collect();
    if !changed.is_empty() {
        state.insert(TOOL_DESCRIPTIONS.into(), Value::Object(changed));
    }
    let versions: Map<String, Value> = DEPENDENCY_VERSIONS
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    state.insert(
        "metadata".into(),
        json!({ "dependency_versions": versions }),
    );
    Value::Object(state)
}

/// Applies `state` to every predictor of `program`, after checking all of it.
pub(super) fn load<P: Parts + ?Sized>(program: &mut P, state: &Value) -> Result<(), StateError> {
    if !state.is_object() {
        return Err(invalid("", "an object", state));
    }
    if let Some(saved) = state
        .pointer("/metadata/dependency_versions/dspy")
        .and_then(Value::as_str)
        .filter(|v| *v != DEPENDENCY_VERSIONS[1].1)
    {
        tracing::warn!(
            saved,
            read_as = DEPENDENCY_VERSIONS[1].1,
            "the program was saved by another DSPy version than the one whose format Signet reads"
        );
    }
    let tools = tool_descriptions(&*program, state)?;
    let mut predictors = program.predictors_mut();
    let flat = is_flat(&predictors);
    let mut parsed = Vec::with_capacity(predictors.len());
    for (path, _) in &predictors {
        let entry = if flat {
            state
        } else {
            state
                .get(path)
                .ok_or_else(|| StateError::Missing { key: path.clone() })?
        };
        parsed.push(PredictorState::read(if flat { "" } else { path }, entry)?);
    }
    for ((_, predictor), state) in predictors.iter_mut().zip(parsed) {
        state.apply(predictor);
    }
    for ((_, core), changed) in program.react_loops_mut().into_iter().zip(tools) {
        // Checked by `tool_descriptions`: every name is one of this loop's tools.
        if let Err(error) = core.reset_tool_descriptions(&changed) {
            tracing::error!("loading tool descriptions: {error}");
        }
    }
    let version: std::sync::Arc<str> = version_of(&to_text(&dump(&*program))).into();
    for (_, predictor) in program.predictors_mut() {
        predictor.carried.version = Some(version.clone());
    }
    Ok(())
}

/// The content hash of a saved program's text: `sha256:` and the first 16 hex digits.
pub(super) fn version_of(saved: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(saved.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The key of a saved program under which Signet keeps the tool descriptions shown in place of
/// the tools' own (`{"tools.search": "..."}`). DSPy has no such state and ignores the key; it is
/// written only when a description was changed, so other files stay byte for byte DSPy's.
pub const TOOL_DESCRIPTIONS: &str = "signet.tool_descriptions";

/// For each ReAct loop of `program`, in order, the `(tool, description)` pairs `state` gives it;
/// an entry naming no tool of the program is an error.
fn tool_descriptions<P: Parts + ?Sized>(
    program: &P,
    state: &Value,
) -> Result<Vec<Vec<(String, String)>>, StateError> {
    let saved = match state.get(TOOL_DESCRIPTIONS) {
        None => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(other) => return Err(invalid(TOOL_DESCRIPTIONS, "an object", other)),
    };
    let mut used = 0;
    let mut loops = Vec::new();
    for (path, core) in program.react_loops() {
        let mut changed = Vec::new();
        for tool in core.tool_list() {
            let name = tool_component(&path, tool.name());
            match saved.get(&name) {
                None => {}
                Some(Value::String(text)) => {
                    used += 1;
                    changed.push((tool.name().to_owned(), text.clone()));
                }
                Some(other) => {
                    return Err(invalid(
                        &format!("{TOOL_DESCRIPTIONS}.{name}"),
                        "a string",
                        other,
                    ));
                }
            }
        }
        loops.push(changed);
    }
    if used < saved.len() {
        let known: Vec<String> = listed_tool_descriptions(program)
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        if let Some(name) = saved.keys().find(|k| !known.contains(k)) {
            return Err(StateError::UnknownTool { name: name.clone() });
        }
    }
    Ok(loops)
}

/// Each tool of each ReAct loop of `program`: the name of its description
/// ([`tool_component`]) and the description the model is shown
/// ([`Predictors::named_tool_descriptions`](super::Predictors::named_tool_descriptions)).
pub(super) fn listed_tool_descriptions<P: Parts + ?Sized>(program: &P) -> Vec<(String, String)> {
    program
        .react_loops()
        .into_iter()
        .flat_map(|(path, core)| {
            core.tool_list()
                .iter()
                .map(|tool| {
                    let name = tool_component(&path, tool.name());
                    (name, tool.description().to_owned())
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The name of the description of `tool` in the ReAct loop at `path` (see
/// [`Predictors::named_tool_descriptions`](super::Predictors::named_tool_descriptions)).
pub(crate) fn tool_component(path: &str, tool: &str) -> String {
    if path == "self" {
        format!("tools.{tool}")
    } else {
        format!("{path}.tools.{tool}")
    }
}

/// `state` as DSPy writes it: two-space indents, raw UTF-8, a final newline.
pub(super) fn to_text(state: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"  ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    // Writing a `Value` to memory cannot fail.
    let _ = state.serialize(&mut serializer);
    let mut text = String::from_utf8(out).unwrap_or_default();
    text.push('\n');
    text
}

/// Reads a saved program's text.
pub(super) fn from_text(origin: &str, text: &str) -> Result<Value, StateError> {
    serde_json::from_str(text).map_err(|e| StateError::Json {
        origin: origin.to_owned(),
        message: e.to_string(),
    })
}

/// Writes `text` to `path` atomically (see [`crate::fs_atomic::write_atomic`]): on an error the
/// file at `path` is as it was.
pub(super) fn write(path: &Path, text: &str) -> Result<(), StateError> {
    crate::fs_atomic::write_atomic(path, text.as_bytes()).map_err(|source| StateError::Io {
        action: "write",
        path: path.display().to_string(),
        source,
    })
}

/// Reads the file at `path`.
pub(super) fn read(path: &Path) -> Result<Value, StateError> {
    let text = std::fs::read_to_string(path).map_err(|source| StateError::Io {
        action: "read",
        path: path.display().to_string(),
        source,
    })?;
    from_text(&path.display().to_string(), &text)
}
