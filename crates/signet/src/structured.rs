//! Getting a value that matches a JSON schema out of any LM, whatever it supports.
//!
//! [`call_structured`] walks a degradation chain chosen from the LM's [`Capabilities`]:
//!
//! 1. **native function calling**: the schema as the parameters of a forced tool call;
//! 2. **JSON mode**: `response_format` (structured outputs, the llama.cpp schema extension, or plain
//!    JSON mode), with one reformat retry that tells the model what was wrong;
//! 3. **plain text**: the schema in the prompt, the first JSON object taken from the reply, with one
//!    reformat retry;
//! 4. **patterns**: no further call; `name: value` lines for the schema's top-level properties,
//!    read from the replies already received (small models often answer so);
//! 5. **default**: the request's [`with_default`](StructuredRequest::with_default) value, if it
//!    has one.
//!
//! A request's own [parser](StructuredRequest::with_parser) reads each text reply before the JSON
//! extraction does. A request's [parse fn](StructuredRequest::with_parse_fn) (or
//! [`with_type`](StructuredRequest::with_type)) checks every value that matches the schema, at
//! every level: a value it refuses counts as invalid there (the reformat retry gives the model its
//! reason, then the chain moves on), and a default it refuses fails the call before any LM call
//! ([`StructuredError::DefaultRefused`]). The result says which level succeeded, the validated
//! value, the usage summed over every call and why the levels before it failed;
//! [`call_structured_as`] also returns the value as a type of yours.
//!
//! ```
//! use signet::lm::Message;
//! use signet::testing::ScriptedLm;
//! use signet::structured::{Level, StructuredRequest, call_structured};
//!
//! let lm = ScriptedLm::texts(["Sure: {\"city\": \"Paris\"}"]);
//! let request = StructuredRequest::new(
//!     "answer",
//!     serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
//!     vec![Message::user("Where is the Louvre?")],
//! );
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let out = call_structured(&lm, &request).await.unwrap();
//! assert_eq!(out.value["city"], "Paris");
//! assert_eq!(out.level, Level::JsonMode); // any OpenAI-compatible endpoint has JSON mode
//! # });
//! ```

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::adapter::{templates, value};
use crate::lm::{
    Capabilities, Completion, Lm, LmError, LmOptions, LmRequest, Message, ResponseFormat,
    ToolChoice, ToolDefinition, Usage,
};
use crate::python::json_dumps;

/// Which level of the chain produced the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Level {
    /// A forced native tool call.
    NativeTool,
    /// JSON mode (`response_format`).
    JsonMode,
    /// Plain text with JSON extraction.
    Text,
    /// `name: value` lines read from the replies received (no call of its own).
    Pattern,
    /// The request's default value: no reply held a valid one.
    Default,
}

/// A parser of a text reply: the value it holds, or `None` to leave the reply to the JSON
/// extraction.
pub type ReplyParser = std::sync::Arc<dyn Fn(&str) -> Option<Value> + Send + Sync>;

/// A check of a value that matches the schema: `Err(reason)` refuses it, as if it did not match
/// (see [`StructuredRequest::with_parse_fn`]).
pub type ParseFn = std::sync::Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// What to ask for.
#[derive(Clone)]
pub struct StructuredRequest {
    /// A name for the value (the forced tool's name; letters, digits and `_`).
    pub name: String,
    /// What the value is, for the model.
    pub description: String,
    /// The JSON schema the value must match.
    pub schema: Value,
    /// The conversation asking for it.
    pub messages: Vec<Message>,
    /// Sampling options.
    pub options: LmOptions,
    /// The value returned when no level produced a valid one (checked against the schema and the
    /// parse fn before any call).
    pub default: Option<Value>,
    /// A parser tried on each text reply before the JSON extraction.
    pub parser: Option<ReplyParser>,
    /// A check run on every value that matches the schema, the default included.
    pub parse_fn: Option<ParseFn>,
}

impl std::fmt::Debug for StructuredRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredRequest")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("schema", &self.schema)
            .field("messages", &self.messages)
            .field("options", &self.options)
            .field("default", &self.default)
            .field("parser", &self.parser.as_ref().map(|_| "<fn>"))
            .field("parse_fn", &self.parse_fn.as_ref().map(|_| "<fn>"))
            .finish()
    }
}

impl StructuredRequest {
    /// A request for a value called `name` matching `schema`, after `messages`.
    pub fn new(
        name: impl Into<String>,
        schema: Value,
        messages: Vec<Message>,
    ) -> StructuredRequest {
        StructuredRequest {
            name: name.into(),
            description: String::new(),
            schema,
            messages,
            options: LmOptions::default(),
            default: None,
            parser: None,
            parse_fn: None,
        }
    }

    /// Returns `value` ([`Level::Default`]) when no level produced a valid value, where the call
    /// would fail with [`StructuredError::Exhausted`]; a `value` that does not match the schema is
    /// [`StructuredError::InvalidSchema`] before any call, one the
    /// [parse fn](Self::with_parse_fn) refuses [`StructuredError::DefaultRefused`]. An LM error
    /// still fails the call.
    pub fn with_default(mut self, value: Value) -> Self {
        self.default = Some(value);
        self
    }

    /// Reads each text reply with `parse` first (a format of your own: a number on its own, a
    /// `key=value` list, ..); `None`, or a value that does not match the schema, leaves the reply
    /// to the JSON extraction.
    ///
    /// ```
    /// use serde_json::{Value, json};
    /// use signet::lm::Message;
    /// use signet::structured::{Level, StructuredRequest, call_structured};
    /// use signet::testing::ScriptedLm;
    ///
    /// let lm = ScriptedLm::texts(["The answer is 42."]).with_capabilities(Default::default());
    /// let request = StructuredRequest::new("n", json!({"type": "integer"}), vec![Message::user("6 * 7?")])
    ///     .with_parser(|text| text.split(' ').find_map(|w| w.trim_end_matches('.').parse::<i64>().ok()).map(Value::from));
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let out = call_structured(&lm, &request).await.unwrap();
    /// assert_eq!(out.value, json!(42));
    /// # });
    /// ```
    pub fn with_parser(
        mut self,
        parse: impl Fn(&str) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.parser = Some(std::sync::Arc::new(parse));
        self
    }

    /// Checks every value that matches the schema with `check` (a rule the schema cannot say, or
    /// your type's own): `Err(reason)` makes the value invalid at its level, like a schema error —
    /// the level's reformat retry tells the model `reason`, then the chain moves on (the pattern
    /// level's value is checked too), and the reason is in that level's [`LevelFailure`]. The
    /// [default](Self::with_default) must pass as well. Called again, adds a check: a value must
    /// pass them all, in the order added.
    ///
    /// ```
    /// use serde_json::{Value, json};
    /// use signet::lm::Message;
    /// use signet::structured::{Level, StructuredRequest, call_structured};
    /// use signet::testing::ScriptedLm;
    ///
    /// let lm = ScriptedLm::texts([r#"{"port": 80}"#, r#"{"port": 8080}"#]);
    /// let schema = json!({"type": "object", "properties": {"port": {"type": "integer"}}, "required": ["port"]});
    /// let request = StructuredRequest::new("server", schema, vec![Message::user("Pick a port.")])
    ///     .with_parse_fn(|value: &Value| match value["port"].as_i64() {
    ///         Some(port) if port >= 1024 => Ok(()),
    ///         _ => Err("the port must be 1024 or more".to_owned()),
    ///     });
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let out = call_structured(&lm, &request).await.unwrap();
    /// assert_eq!((out.level, out.value), (Level::JsonMode, json!({"port": 8080})));
    /// // The reformat retry gave the model the reason.
    /// assert!(lm.requests()[1].messages.last().unwrap().content.contains("1024 or more"));
    /// # });
    /// ```
    pub fn with_parse_fn(
        mut self,
        check: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.parse_fn = Some(match self.parse_fn.take() {
            None => std::sync::Arc::new(check),
            Some(earlier) => std::sync::Arc::new(move |value: &Value| {
                earlier(value)?;
                check(value)
            }),
        });
        self
    }

    /// Checks every value that matches the schema by reading it as a `T`
    /// ([`with_parse_fn`](Self::with_parse_fn) with `serde_json::from_value::<T>`): a value `T`
    /// cannot hold (a number out of its range, a string its enum does not know, ..) is invalid at
    /// its level, serde's message its reason.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::lm::Message;
    /// use signet::structured::{Level, StructuredRequest, call_structured};
    /// use signet::testing::ScriptedLm;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Volume { level: u8 }
    ///
    /// let lm = ScriptedLm::texts([r#"{"level": 300}"#, r#"{"level": 30}"#]);
    /// let schema = json!({"type": "object", "properties": {"level": {"type": "integer"}}, "required": ["level"]});
    /// let request = StructuredRequest::new("volume", schema, vec![Message::user("How loud?")])
    ///     .with_type::<Volume>();
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let out = call_structured(&lm, &request).await.unwrap();
    /// assert_eq!(out.value, json!({"level": 30})); // 300 does not fit a u8: asked again
    /// # });
    /// ```
    pub fn with_type<T: DeserializeOwned>(self) -> Self {
        self.with_parse_fn(|value| {
            serde_json::from_value::<T>(value.clone())
                .map(drop)
                .map_err(|e| {
                    format!(
                        "not a valid {}: {e}",
                        crate::telemetry::short_type_name::<T>()
                    )
                })
        })
    }

    /// Describes the value for the model.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

/// A value that matches the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Structured {
    /// The value.
    pub value: Value,
    /// The level that produced it.
    pub level: Level,
    /// Usage over every call made, failed levels included.
    pub usage: Usage,
    /// Why each level before `level` failed, in order (schema errors, parse fn refusals, ..).
    pub failures: Vec<LevelFailure>,
}

/// Why no level produced a valid value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredError {
    /// The schema itself is not a valid JSON schema.
    #[error("the requested schema is invalid: {message}")]
    InvalidSchema {
        /// What the schema compiler reported.
        message: String,
    },
    /// Every level was tried and failed.
    #[error("no valid structured value after trying {}: {}", failures.iter().map(|f| format!("{:?}", f.level)).collect::<Vec<_>>().join(", "), failures.iter().map(|f| f.reason.clone()).collect::<Vec<_>>().join("; "))]
    Exhausted {
        /// What went wrong at each level, in order.
        failures: Vec<LevelFailure>,
        /// Usage over every call made.
        usage: Usage,
    },
    /// The request's [parse fn](StructuredRequest::with_parse_fn) refuses its
    /// [default](StructuredRequest::with_default) (found before any call).
    #[error("the default value is refused by the parse fn: {reason}")]
    DefaultRefused {
        /// The parse fn's reason.
        reason: String,
    },
    /// The LM failed in a way another level cannot fix (context window, connection, ..).
    #[error("{error}")]
    Lm {
        /// What the LM reported.
        error: LmError,
        /// Usage over the calls made, the failed one counted in `lm_calls`.
        usage: Usage,
    },
}

impl StructuredError {
    /// The LM usage of the calls made before the failure, failed calls included: what a caller
    /// adds to its own usage so that no call goes uncounted.
    ///
    /// ```
    /// use signet::lm::{LmError, Usage};
    /// use signet::structured::StructuredError;
    /// let usage = Usage { lm_calls: 2, ..Usage::default() };
    /// let error = StructuredError::Lm { error: LmError::Timeout { after: std::time::Duration::from_secs(1) }, usage };
    /// assert_eq!(error.usage().lm_calls, 2);
    /// ```
    pub fn usage(&self) -> Usage {
        match self {
            StructuredError::InvalidSchema { .. } | StructuredError::DefaultRefused { .. } => {
                Usage::default()
            }
            StructuredError::Exhausted { usage, .. } | StructuredError::Lm { usage, .. } => *usage,
        }
    }
}

/// One level's failure.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelFailure {
    /// The level.
    pub level: Level,
    /// Why it failed.
    pub reason: String,
}

/// Runs the degradation chain for `request` on `lm` (see the [module docs](self)).
pub async fn call_structured(
    lm: &dyn Lm,
    request: &StructuredRequest,
) -> Result<Structured, StructuredError> {
    let validator =
        jsonschema::validator_for(&request.schema).map_err(|e| StructuredError::InvalidSchema {
            message: e.to_string(),
        })?;
    if let Some(default) = &request.default {
        check(&validator, default).map_err(|error| StructuredError::InvalidSchema {
            message: format!("the default value does not match the schema: {error}"),
        })?;
        if let Some(parse_fn) = &request.parse_fn {
            parse_fn(default).map_err(|reason| StructuredError::DefaultRefused { reason })?;
        }
    }
    let capabilities = lm.capabilities();
    let mut usage = Usage::default();
    let mut failures = Vec::new();
    let mut replies = Vec::new();
    for level in levels(capabilities) {
        let attempted = attempt(
            lm,
            request,
            level,
            capabilities,
            &validator,
            &mut usage,
            &mut replies,
        );
        match attempted.await {
            Ok(value) => {
                return Ok(Structured {
                    value,
                    level,
                    usage,
                    failures,
                });
            }
            Err(Failure::Invalid(reason)) | Err(Failure::Rejected(reason)) => {
                tracing::warn!(?level, %reason, "structured call failed at this level; trying the next");
                failures.push(LevelFailure { level, reason });
            }
            Err(Failure::Fatal(error)) => return Err(StructuredError::Lm { error, usage }),
        }
    }
    let fallbacks = [
        (Level::Pattern, from_patterns(request, &validator, &replies)),
        (
            Level::Default,
            request
                .default
                .clone()
                .ok_or_else(|| "no default value".to_owned()),
        ),
    ];
    for (level, found) in fallbacks {
        match found {
            Ok(value) => {
                tracing::warn!(?level, "structured call answered by a fallback level");
                return Ok(Structured {
                    value,
                    level,
                    usage,
                    failures,
                });
            }
            Err(reason) => failures.push(LevelFailure { level, reason }),
        }
    }
    Err(StructuredError::Exhausted { failures, usage })
}

/// [`call_structured`] for a value of type `T`: every candidate value is also read as a `T`
/// ([`StructuredRequest::with_type`]), so one `T` cannot hold moves the chain on like a schema
/// error. Returns the `T` and the [`Structured`] result it was read from.
///
/// ```
/// use serde_json::json;
/// use signet::lm::Message;
/// use signet::structured::{StructuredRequest, call_structured_as};
/// use signet::testing::ScriptedLm;
///
/// #[derive(serde::Deserialize, Debug, PartialEq)]
/// struct City { name: String, population: u32 }
///
/// let lm = ScriptedLm::texts([r#"{"name": "Paris", "population": 2100000}"#]);
/// let schema = json!({"type": "object", "properties": {"name": {"type": "string"}, "population": {"type": "integer"}}});
/// let request = StructuredRequest::new("city", schema, vec![Message::user("The capital of France?")]);
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (city, out) = call_structured_as::<City>(&lm, &request).await.unwrap();
/// assert_eq!(city, City { name: "Paris".into(), population: 2_100_000 });
/// assert!(out.failures.is_empty());
/// # });
/// ```
pub async fn call_structured_as<T: DeserializeOwned>(
    lm: &dyn Lm,
    request: &StructuredRequest,
) -> Result<(T, Structured), StructuredError> {
    let typed = request.clone().with_type::<T>();
    let out = call_structured(lm, &typed).await?;
    match serde_json::from_value::<T>(out.value.clone()) {
        Ok(value) => Ok((value, out)),
        // The value was read as a `T` already; a `Deserialize` that changes its mind lands here.
        Err(error) => {
            let mut failures = out.failures;
            failures.push(LevelFailure {
                level: out.level,
                reason: format!(
                    "not a valid {}: {error}",
                    crate::telemetry::short_type_name::<T>()
                ),
            });
            Err(StructuredError::Exhausted {
                failures,
                usage: out.usage,
            })
        }
    }
}

/// `name: value` lines (also `"name": value`, `- name = value`) for the top-level properties of
/// an object `schema`, read from `replies`, each value coerced to its property's type; the object
/// they make, if it matches the schema.
fn from_patterns(
    request: &StructuredRequest,
    validator: &jsonschema::Validator,
    replies: &[String],
) -> Result<Value, String> {
    let schema = &request.schema;
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Err("the schema has no properties to look for".to_owned());
    };
    let mut found = serde_json::Map::new();
    for (name, property) in properties {
        let pattern = format!(
            r#"(?mi)^[\s\-*]*["'`]?{}["'`]?\s*[:=]\s*(.+?)\s*,?\s*$"#,
            regex::escape(name)
        );
        let Ok(pattern) = regex::Regex::new(&pattern) else {
            continue;
        };
        let raw = replies
            .iter()
            .rev()
            .find_map(|reply| pattern.captures(reply).map(|c| c[1].to_owned()));
        if let Some(raw) = raw {
            let raw = raw.trim_matches(|c| c == '"' || c == '\'' || c == '`');
            let text = Value::String(raw.to_owned());
            let coerced = value::lenient_json(raw)
                .filter(|parsed| check_against(property, schema, parsed))
                .or_else(|| value::coerce(&text, property, schema).ok())
                .unwrap_or(text);
            found.insert(name.clone(), coerced);
        }
    }
    if found.is_empty() {
        return Err("no `name: value` line for any property".to_owned());
    }
    let value = Value::Object(found);
    accept(request, validator, &value)?;
    Ok(value)
}

/// Whether `value` matches the property schema `property` of `root`.
fn check_against(property: &Value, root: &Value, value: &Value) -> bool {
    let mut schema = property.clone();
    if let (Value::Object(map), Some(defs)) = (&mut schema, root.get("$defs")) {
        map.insert("$defs".to_owned(), defs.clone());
    }
    jsonschema::validator_for(&schema).is_ok_and(|v| v.is_valid(value))
}

fn levels(capabilities: Capabilities) -> Vec<Level> {
    let mut levels = Vec::new();
    if capabilities.function_calling {
        levels.push(Level::NativeTool);
    }
    if capabilities.response_schema || capabilities.json_object_schema || capabilities.json_object {
        levels.push(Level::JsonMode);
    }
    levels.push(Level::Text);
    levels
}

enum Failure {
    /// The reply did not hold a valid value.
    Invalid(String),
    /// The provider refused this kind of request (e.g. no tools): try the next level.
    Rejected(String),
    /// Nothing another level could change.
    Fatal(LmError),
}

/// One level's calls; their text replies are added to `replies` (for the pattern level).
async fn attempt(
    lm: &dyn Lm,
    request: &StructuredRequest,
    level: Level,
    capabilities: Capabilities,
    validator: &jsonschema::Validator,
    usage: &mut Usage,
    replies: &mut Vec<String>,
) -> Result<Value, Failure> {
    let mut lm_request = LmRequest::new(request.messages.clone());
    lm_request.options = request.options.clone();
    match level {
        Level::NativeTool => {
            lm_request.tools = vec![ToolDefinition::new(
                &request.name,
                &request.description,
                request.schema.clone(),
            )];
            lm_request.tool_choice = Some(ToolChoice::Function(request.name.clone()));
            let completion = send(lm, &lm_request, usage).await?;
            let call = completion
                .tool_calls
                .iter()
                .find(|c| c.name == request.name)
                .ok_or_else(|| Failure::Invalid("the model did not call the tool".to_owned()))?;
            let value = call
                .args()
                .map_err(|e| Failure::Invalid(format!("the tool arguments are not JSON: {e}")))?;
            accept(request, validator, &value).map_err(Failure::Invalid)?;
            Ok(value)
        }
        Level::JsonMode | Level::Text => {
            if level == Level::JsonMode {
                lm_request.response_format = Some(json_mode_format(request, capabilities));
            }
            lm_request
                .messages
                .push(Message::user(templates::structured_instruction(
                    &json_dumps(&request.schema, None),
                )));
            let completion = send(lm, &lm_request, usage).await?;
            let text = completion.text.clone().unwrap_or_default();
            replies.push(text.clone());
            let error = match read(request, validator, &text) {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            // One reformat retry, telling the model what was wrong.
            lm_request.messages.push(Message::assistant(text));
            lm_request
                .messages
                .push(Message::user(templates::structured_reformat(&error)));
            let completion = send(lm, &lm_request, usage).await?;
            let text = completion.text.unwrap_or_default();
            replies.push(text.clone());
            read(request, validator, &text).map_err(Failure::Invalid)
        }
        // Not levels that call the LM: `call_structured` tries them after these.
        Level::Pattern | Level::Default => {
            Err(Failure::Invalid("no call at this level".to_owned()))
        }
    }
}

fn json_mode_format(request: &StructuredRequest, capabilities: Capabilities) -> ResponseFormat {
    if capabilities.response_schema {
        ResponseFormat::JsonSchema {
            name: request.name.clone(),
            schema: request.schema.clone(),
            strict: false,
        }
    } else if capabilities.json_object_schema {
        ResponseFormat::Raw(json!({"type": "json_object", "schema": request.schema}))
    } else {
        ResponseFormat::JsonObject
    }
}

async fn send(lm: &dyn Lm, request: &LmRequest, usage: &mut Usage) -> Result<Completion, Failure> {
    let result = lm.complete(request).await;
    if result.is_err() {
        // A failed call was made all the same.
        usage.lm_calls += 1;
    }
    match result {
        Ok(completion) => {
            *usage += completion.usage;
            Ok(completion)
        }
        Err(LmError::Rejected { status, message }) => Err(Failure::Rejected(format!(
            "the provider rejected the request (HTTP {status}): {message}"
        ))),
        Err(error) => Err(Failure::Fatal(error)),
    }
}

/// The value the request's parser reads in `text`, else the first JSON object in it, checked
/// against the schema and the parse fn. When the parser's value is refused and the reply holds no
/// JSON value, the parser's reason is the one given.
fn read(
    request: &StructuredRequest,
    validator: &jsonschema::Validator,
    text: &str,
) -> Result<Value, String> {
    let mut parsed_refusal = None;
    if let Some(value) = request.parser.as_ref().and_then(|parse| parse(text)) {
        match accept(request, validator, &value) {
            Ok(()) => return Ok(value),
            Err(reason) => parsed_refusal = Some(reason),
        }
    }
    if value::nested_too_deep(text) {
        return Err(value::too_deep());
    }
    let candidate = value::first_json_object(text).unwrap_or(text);
    let value = value::lenient_json(candidate).ok_or_else(|| {
        parsed_refusal.unwrap_or_else(|| "the reply holds no JSON value".to_owned())
    })?;
    accept(request, validator, &value)?;
    Ok(value)
}

/// Whether `value` matches the schema, then passes the request's parse fn.
fn accept(
    request: &StructuredRequest,
    validator: &jsonschema::Validator,
    value: &Value,
) -> Result<(), String> {
    check(validator, value)?;
    match &request.parse_fn {
        Some(parse_fn) => parse_fn(value)
            .map_err(|reason| format!("the value matches the schema but is refused: {reason}")),
        None => Ok(()),
    }
}

fn check(validator: &jsonschema::Validator, value: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| {
            let path = e.instance_path().to_string();
            if path.is_empty() {
                e.to_string()
            } else {
                format!("at {path}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_type_names_lose_their_module_paths() {
        assert_eq!(
            crate::telemetry::short_type_name::<Vec<Level>>(),
            "Vec<Level>"
        );
        assert_eq!(
            crate::telemetry::short_type_name::<Option<(u8, String)>>(),
            "Option<(u8, String)>"
        );
    }

    #[test]
    fn structured_acceptance_checks_the_schema_before_the_parse_fn() {
        let schema = json!({"type": "integer"});
        let validator = jsonschema::validator_for(&schema).unwrap();
        let request = StructuredRequest::new("n", schema, Vec::new())
            .with_parse_fn(|v| match v.as_i64() {
                Some(n) if n % 2 == 0 => Ok(()),
                _ => Err("odd".to_owned()),
            })
            .with_type::<u8>();
        assert_eq!(accept(&request, &validator, &json!(4)), Ok(()));
        let odd = accept(&request, &validator, &json!(3)).unwrap_err();
        assert!(odd.ends_with("refused: odd"), "{odd}");
        let wide = accept(&request, &validator, &json!(400)).unwrap_err();
        assert!(wide.contains("not a valid u8"), "{wide}");
        // A schema error is reported as such; the parse fn never sees the value.
        let text = accept(&request, &validator, &json!("4")).unwrap_err();
        assert!(!text.contains("refused"), "{text}");
    }
}
