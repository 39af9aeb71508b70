//! Getting a value that matches a JSON schema out of any LM, whatever it supports.
//!
//! [`call_structured`] walks a degradation chain chosen from the LM's [`Capabilities`]:
//!
//! 1. **native function calling**: the schema as the parameters of a forced tool call;
//! 2. **JSON mode**: `response_format` (structured outputs, the llama.cpp schema extension, or plain
//!    JSON mode), with one reformat retry that tells the model what was wrong;
//! 3. **plain text**: the schema in the prompt, the first JSON object taken from the reply, with one
//!    reformat retry.
//!
//! The result says which level succeeded, the validated value, and the usage summed over every call.
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

use serde_json::{Value, json};

use crate::adapter::{templates, value};
use crate::lm::{
    Capabilities, Completion, Lm, LmError, LmOptions, LmRequest, Message, ResponseFormat,
    ToolChoice, ToolDefinition, Usage,
};
use crate::python::json_dumps;

/// Which level of the chain produced the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A forced native tool call.
    NativeTool,
    /// JSON mode (`response_format`).
    JsonMode,
    /// Plain text with JSON extraction.
    Text,
}

/// What to ask for.
#[derive(Debug, Clone)]
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
        }
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
            StructuredError::InvalidSchema { .. } => Usage::default(),
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
    let capabilities = lm.capabilities();
    let mut usage = Usage::default();
    let mut failures = Vec::new();
    for level in levels(capabilities) {
        match attempt(lm, request, level, capabilities, &validator, &mut usage).await {
            Ok(value) => {
                return Ok(Structured {
                    value,
                    level,
                    usage,
                });
            }
            Err(Failure::Invalid(reason)) | Err(Failure::Rejected(reason)) => {
                tracing::warn!(?level, %reason, "structured call failed at this level; trying the next");
                failures.push(LevelFailure { level, reason });
            }
            Err(Failure::Fatal(error)) => return Err(StructuredError::Lm { error, usage }),
        }
    }
    Err(StructuredError::Exhausted { failures, usage })
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

async fn attempt(
    lm: &dyn Lm,
    request: &StructuredRequest,
    level: Level,
    capabilities: Capabilities,
    validator: &jsonschema::Validator,
    usage: &mut Usage,
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
            check(validator, &value).map_err(Failure::Invalid)?;
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
            let error = match read(validator, &text) {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            // One reformat retry, telling the model what was wrong.
            lm_request.messages.push(Message::assistant(text));
            lm_request
                .messages
                .push(Message::user(templates::structured_reformat(&error)));
            let completion = send(lm, &lm_request, usage).await?;
            read(validator, &completion.text.unwrap_or_default()).map_err(Failure::Invalid)
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

/// The first JSON object in `text`, checked against the schema.
fn read(validator: &jsonschema::Validator, text: &str) -> Result<Value, String> {
    if value::nested_too_deep(text) {
        return Err(value::too_deep());
    }
    let candidate = value::first_json_object(text).unwrap_or(text);
    let value =
        value::lenient_json(candidate).ok_or_else(|| "the reply holds no JSON value".to_owned())?;
    check(validator, &value)?;
    Ok(value)
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
