//! The data that crosses the LM boundary: messages, requests, completions, usage.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Content, ProviderState};
use crate::tool::ToolDefinition;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The user (or the program speaking for them).
    User,
    /// The model.
    Assistant,
    /// The result of a tool call, answering an assistant message's tool call.
    Tool,
}

/// One chat message, serialized in the OpenAI shape
/// (`{"role": "user", "content": "..."}`, plus `tool_calls` / `tool_call_id` when present).
///
/// ```
/// use signet::lm::Message;
/// let m = Message::user("Hello");
/// assert_eq!(serde_json::to_value(&m).unwrap(), serde_json::json!({"role": "user", "content": "Hello"}));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text, or text with images and audio (empty for an assistant message that only calls
    /// tools).
    pub content: Content,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For an assistant message: what the provider that wrote it asked to get back with it
    /// ([`Completion::provider_state`]); a provider sends back only its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_state: Option<ProviderState>,
}

impl Message {
    /// A message with `role` and `content`.
    pub fn new(role: Role, content: impl Into<Content>) -> Message {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            provider_state: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<Content>) -> Message {
        Message::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<Content>) -> Message {
        Message::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<Content>) -> Message {
        Message::new(Role::Assistant, content)
    }

    /// An assistant message that calls tools (its content is `""`, which every OpenAI-compatible
    /// server accepts).
    pub fn assistant_tool_calls(tool_calls: Vec<ToolCall>) -> Message {
        Message {
            tool_calls,
            ..Message::assistant("")
        }
    }

    /// The assistant message that carries `completion` on in a conversation: its text, its tool
    /// calls and its [provider state](Completion::provider_state).
    ///
    /// ```
    /// use signet::lm::{Completion, Message, ToolCall};
    /// let completion = Completion::tool_calls(vec![ToolCall::new("c1", "add", "{}")]);
    /// assert_eq!(Message::from_completion(&completion).tool_calls[0].id, "c1");
    /// ```
    pub fn from_completion(completion: &Completion) -> Message {
        Message {
            tool_calls: completion.tool_calls.clone(),
            provider_state: completion.provider_state.clone(),
            ..Message::assistant(completion.text.clone().unwrap_or_default())
        }
    }

    /// The provider state this message carries for `provider`, if it carries one of that
    /// provider's (another provider's, after a [`FallbackLm`](crate::lm::FallbackLm) switched,
    /// is not sent).
    pub fn provider_state_of(&self, provider: &str) -> Option<&Value> {
        self.provider_state
            .as_ref()
            .filter(|state| state.provider() == provider)
            .map(ProviderState::data)
    }

    /// A tool result answering the call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<Content>) -> Message {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            ..Message::new(Role::Tool, content)
        }
    }
}

/// A tool call requested by the model.
///
/// ```
/// let call = signet::lm::ToolCall::new("call_1", "add", r#"{"a": 2, "b": 3}"#);
/// assert_eq!(call.args().unwrap()["a"], 2);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call (echoed back in the `tool` message that answers it).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments exactly as the model wrote them (a JSON text, possibly malformed).
    pub arguments: String,
}

impl ToolCall {
    /// A tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// The arguments parsed as JSON (an empty text counts as `{}`).
    pub fn args(&self) -> Result<Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            return Ok(Value::Object(Map::new()));
        }
        serde_json::from_str(&self.arguments)
    }
}

/// How the model must format its reply. Serialized as the OpenAI `response_format` object it
/// stands for (a [`Raw`](ResponseFormat::Raw) one as given), so a serialized request round-trips.
///
/// ```
/// use serde_json::json;
/// use signet::lm::ResponseFormat;
/// let raw = ResponseFormat::Raw(json!({"type": "json_object", "schema": {"type": "object"}}));
/// let text = serde_json::to_value(&raw).unwrap();
/// assert_eq!(text, json!({"type": "json_object", "schema": {"type": "object"}}));
/// assert_eq!(serde_json::from_value::<ResponseFormat>(text).unwrap(), raw);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseFormat {
    /// Free text (the default).
    Text,
    /// Any JSON object (`{"type": "json_object"}`).
    JsonObject,
    /// JSON matching `schema` (OpenAI structured outputs: `{"type": "json_schema", "json_schema":
    /// {"name", "strict", "schema"}}`).
    JsonSchema {
        /// A name for the schema.
        name: String,
        /// The schema.
        schema: Value,
        /// Whether the provider must follow the schema exactly.
        strict: bool,
    },
    /// Sent as given: for server extensions such as llama.cpp's
    /// `{"type": "json_object", "schema": {...}}`.
    Raw(Value),
}

impl ResponseFormat {
    /// The `response_format` object sent to the server.
    pub fn to_json(&self) -> Value {
        match self {
            ResponseFormat::Text => serde_json::json!({"type": "text"}),
            ResponseFormat::JsonObject => serde_json::json!({"type": "json_object"}),
            ResponseFormat::JsonSchema {
                name,
                schema,
                strict,
            } => serde_json::json!({
                "type": "json_schema",
                "json_schema": {"name": name, "strict": strict, "schema": schema},
            }),
            ResponseFormat::Raw(value) => value.clone(),
        }
    }

    /// The format a `response_format` object stands for: the three OpenAI forms, anything else
    /// [`Raw`](ResponseFormat::Raw).
    pub fn from_json(value: Value) -> ResponseFormat {
        let kind = value.get("type").and_then(Value::as_str);
        let keys = value.as_object().map_or(0, Map::len);
        match (kind, keys) {
            (Some("text"), 1) => ResponseFormat::Text,
            (Some("json_object"), 1) => ResponseFormat::JsonObject,
            (Some("json_schema"), 2) => {
                let spec = &value["json_schema"];
                match (spec.get("name").and_then(Value::as_str), spec.get("schema")) {
                    (Some(name), Some(schema)) if spec.as_object().map_or(0, Map::len) <= 3 => {
                        ResponseFormat::JsonSchema {
                            name: name.to_owned(),
                            schema: schema.clone(),
                            strict: spec.get("strict").and_then(Value::as_bool).unwrap_or(false),
                        }
                    }
                    _ => ResponseFormat::Raw(value),
                }
            }
            _ => ResponseFormat::Raw(value),
        }
    }
}

impl Serialize for ResponseFormat {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ResponseFormat {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(ResponseFormat::from_json)
    }
}

/// Which tool the model may or must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool must be called.
    Function(String),
    /// One (or more) of these tools must be called; the other tools stay offered where the
    /// provider can say so (a [`ConstrainedToolCalls`](crate::lm::ConstrainedToolCalls) model is
    /// still shown every tool, its reply constrained to these), and an OpenAI-compatible server
    /// is sent only these, with `"required"`. What a re-ask after a refused answer uses
    /// ([`crate::module::check`]).
    OneOf(Vec<String>),
}

/// Sampling and length settings of a request.
///
/// ```
/// use signet::lm::LmOptions;
/// let options = LmOptions::new().temperature(0.0).max_tokens(400);
/// assert_eq!((options.temperature, options.max_tokens), (Some(0.0), Some(400)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LmOptions {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Upper bound on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Seed for reproducible sampling, where the provider supports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// Lowers the odds of a token by how often it already appeared (OpenAI's
    /// `frequency_penalty`, -2 to 2; llama.cpp, vLLM and Ollama take it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f32>,
    /// Lowers the odds of a token that already appeared at all (OpenAI's `presence_penalty`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f32>,
    /// Divides the odds of tokens seen in the last stretch of text (llama.cpp's
    /// `repeat_penalty`, 1.0 = off; not an OpenAI setting, so OpenAI itself rejects it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f32>,
    /// Keeps otherwise identical requests apart in response caches (DSPy's `rollout_id`): each
    /// attempt of [`BestOfN`](crate::module::BestOfN) has its own. Never sent to the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_id: Option<u64>,
}

impl LmOptions {
    /// No settings: the provider's defaults.
    pub fn new() -> LmOptions {
        LmOptions::default()
    }

    crate::shared::setters! {
        /// Sets the sampling temperature.
        fn temperature(temperature: f32) { temperature = Some(temperature) }

        /// Sets the upper bound on generated tokens.
        fn max_tokens(max_tokens: u32) { max_tokens = Some(max_tokens) }
    }

    /// Adds a stop sequence.
    pub fn stop(mut self, stop: impl Into<String>) -> Self {
        self.stop.push(stop.into());
        self
    }

    crate::shared::setters! {
        /// Sets the sampling seed.
        fn seed(seed: i64) { seed = Some(seed) }

        /// Sets nucleus sampling.
        fn top_p(top_p: f32) { top_p = Some(top_p) }

        /// Sets the frequency penalty: a small model that repeats a phrase until the token limit
        /// repeats it less.
        ///
        /// ```
        /// use signet::lm::LmOptions;
        /// let options = LmOptions::new().frequency_penalty(0.5).presence_penalty(0.2);
        /// assert_eq!(options.frequency_penalty, Some(0.5));
        /// ```
        fn frequency_penalty(penalty: f32) { frequency_penalty = Some(penalty) }

        /// Sets the presence penalty.
        fn presence_penalty(penalty: f32) { presence_penalty = Some(penalty) }

        /// Sets llama.cpp's repeat penalty (1.0 is off; 1.1 to 1.3 is usual).
        ///
        /// ```
        /// use signet::lm::LmOptions;
        /// assert_eq!(LmOptions::new().repeat_penalty(1.2).repeat_penalty, Some(1.2));
        /// ```
        fn repeat_penalty(penalty: f32) { repeat_penalty = Some(penalty) }

        /// Sets the rollout id, which only keeps this request apart from identical ones in
        /// caches (a request at temperature 0 gets the same answer whatever its rollout).
        ///
        /// ```
        /// use signet::lm::{LmRequest, Message, LmOptions};
        /// use signet::lm::ResponseCache;
        /// let a = LmRequest::new(vec![Message::user("hi")]);
        /// let mut b = a.clone();
        /// b.options = LmOptions::new().rollout_id(1);
        /// assert_ne!(ResponseCache::key("m", &a), ResponseCache::key("m", &b));
        /// ```
        fn rollout_id(id: u64) { rollout_id = Some(id) }
    }
}

/// Everything one LM call sends.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LmRequest {
    /// The conversation.
    pub messages: Vec<Message>,
    /// Sampling and length settings.
    #[serde(default)]
    pub options: LmOptions,
    /// Reply format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Tools offered for native function calling (see [`Tool::definition`](crate::Tool::definition));
    /// each goes on the wire as an OpenAI function descriptor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// Tool choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Extra top-level fields sent as given (server extensions); `OpenAiLm` leaves out those
    /// whose value is `null`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl LmRequest {
    /// A request with these messages and nothing else set.
    pub fn new(messages: Vec<Message>) -> LmRequest {
        LmRequest {
            messages,
            ..LmRequest::default()
        }
    }

    /// How many tool calls the assistant made earlier in the conversation: the number of the
    /// next call, for ids (`call_<n>`) unique within the conversation.
    pub(crate) fn tool_calls_so_far(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .map(|m| m.tool_calls.len())
            .sum()
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural stop or a stop sequence.
    Stop,
    /// The token limit was reached (the reply may be cut off).
    Length,
    /// The model called tools.
    ToolCalls,
    /// The provider filtered the content.
    ContentFilter,
    /// Anything else the provider reported.
    Other(String),
}

/// Tokens and calls spent. Adds up with `+=`.
///
/// ```
/// use signet::lm::Usage;
/// let mut total = Usage::default();
/// total += Usage { prompt_tokens: 10, completion_tokens: 5, lm_calls: 1, ..Usage::default() };
/// total += Usage { prompt_tokens: 3, completion_tokens: 1, lm_calls: 1, ..Usage::default() };
/// assert_eq!((total.prompt_tokens, total.completion_tokens, total.lm_calls), (13, 6, 2));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompts.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// LM calls made (cache hits excluded).
    pub lm_calls: u64,
    /// Calls answered from the cache.
    pub cache_hits: u64,
    /// Times an adapter fell back to another format after a parse failure (each one an extra call).
    pub adapter_fallbacks: u64,
    /// Retries after transient errors (rate limits, server errors, timeouts).
    pub retries: u64,
    /// Prompt tokens the provider served from its prompt cache (a part of `prompt_tokens`, billed
    /// lower by most), where it reports them.
    #[serde(default)]
    pub cached_prompt_tokens: u64,
    /// What the calls cost, in billionths of a US dollar, when the LM has a
    /// [`Pricing`](crate::lm::Pricing) (0 without one); [`cost_usd`](Self::cost_usd) in dollars.
    #[serde(default)]
    pub cost_nanousd: u64,
    /// Prompt tokens the provider wrote to its prompt cache on this call (a part of
    /// `prompt_tokens`, billed higher by Anthropic), where it reports them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_prompt_tokens: u64,
    /// Times a module asked the model again because its answer failed an output check
    /// ([`crate::module::check`]); each re-ask's own calls count in `lm_calls` too.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasks: u64,
    /// Replies stopped while they streamed because a check had already failed on what was
    /// written (each counts in `lm_calls`; its tokens are not known: a stream reports them at its
    /// end).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stopped_replies: u64,
    /// Calls a [`FallbackLm`](crate::lm::FallbackLm) handed to its next LM because one failed
    /// (rate limited, overloaded, down); the answering model is [`Completion::model`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fallbacks: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Prompt plus completion tokens.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// What the calls cost in US dollars (0 when the LM has no [`Pricing`](crate::lm::Pricing)).
    ///
    /// ```
    /// use signet::lm::Usage;
    /// let usage = Usage { cost_nanousd: 1_500_000, ..Usage::default() };
    /// assert_eq!(usage.cost_usd(), 0.0015);
    /// ```
    pub fn cost_usd(&self) -> f64 {
        self.cost_nanousd as f64 / 1e9
    }
}

/// Adds counts with saturating arithmetic: the token counts come from the endpoint, and a count
/// near `u64::MAX` stays at `u64::MAX` instead of overflowing.
impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.lm_calls = self.lm_calls.saturating_add(other.lm_calls);
        self.cache_hits = self.cache_hits.saturating_add(other.cache_hits);
        self.adapter_fallbacks = self
            .adapter_fallbacks
            .saturating_add(other.adapter_fallbacks);
        self.retries = self.retries.saturating_add(other.retries);
        self.cached_prompt_tokens = self
            .cached_prompt_tokens
            .saturating_add(other.cached_prompt_tokens);
        self.cost_nanousd = self.cost_nanousd.saturating_add(other.cost_nanousd);
        self.cache_write_prompt_tokens = self
            .cache_write_prompt_tokens
            .saturating_add(other.cache_write_prompt_tokens);
        self.reasks = self.reasks.saturating_add(other.reasks);
        self.stopped_replies = self.stopped_replies.saturating_add(other.stopped_replies);
        self.fallbacks = self.fallbacks.saturating_add(other.fallbacks);
    }
}

/// What the model answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// The text of the reply (`None` when the model only called tools).
    pub text: Option<String>,
    /// Tool calls, in the order the model made them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning text of reasoning models (`reasoning_content`), kept separate from the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Why the model stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// Tokens and calls spent on this completion.
    #[serde(default)]
    pub usage: Usage,
    /// The model that answered, when the LM chose among several (a
    /// [`FallbackLm`](crate::lm::FallbackLm)); `None` means the LM's own
    /// [`model`](crate::lm::Lm::model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What the provider asks to get back, unchanged, when the conversation goes on after this
    /// reply: Anthropic's signed `thinking` blocks, Gemini's thought signatures, the Responses
    /// API's reasoning items. Native tool loops put it on the assistant message that carries the
    /// reply's calls ([`Message::from_completion`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_state: Option<ProviderState>,
}

impl Completion {
    /// A text-only completion.
    pub fn text(text: impl Into<String>) -> Completion {
        Completion {
            text: Some(text.into()),
            finish_reason: Some(FinishReason::Stop),
            ..Completion::default()
        }
    }

    /// A completion that only calls tools.
    pub fn tool_calls(tool_calls: Vec<ToolCall>) -> Completion {
        Completion {
            tool_calls,
            finish_reason: Some(FinishReason::ToolCalls),
            ..Completion::default()
        }
    }
}

/// One event of a streamed completion ([`Lm::stream`](super::Lm::stream)).
///
/// Deltas arrive in the order the model produces them; the last event of a successful stream is
/// always [`Done`](StreamEvent::Done), carrying the whole completion assembled from the deltas
/// (with usage), so a consumer that only wants the result can skip everything else.
///
/// ```
/// use signet::lm::{Completion, StreamEvent};
/// let event = StreamEvent::TextDelta("Hel".into());
/// assert!(matches!(event, StreamEvent::TextDelta(ref t) if t == "Hel"));
/// assert!(matches!(StreamEvent::Done(Completion::text("Hello")), StreamEvent::Done(_)));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A piece of the reply's text.
    TextDelta(String),
    /// A piece of the model's reasoning (`reasoning_content`).
    ReasoningDelta(String),
    /// A piece of a tool call. The first delta of a call usually carries its `id` and `name`; the
    /// arguments arrive in pieces that concatenate to the call's raw arguments text.
    ToolCallDelta {
        /// Which tool call of the reply this piece belongs to (0-based).
        index: usize,
        /// The call's id, when this delta carries it.
        id: Option<String>,
        /// The tool's name, when this delta carries it.
        name: Option<String>,
        /// A piece of the arguments text (possibly empty).
        arguments: String,
    },
    /// The end of the stream: the assembled completion.
    Done(Completion),
}

/// Folds [`StreamEvent`] deltas into a [`Completion`]: what every streaming implementation (and a
/// consumer that wants to rebuild the reply itself) needs.
///
/// ```
/// use signet::lm::{StreamAssembler, StreamEvent};
/// let mut assembler = StreamAssembler::default();
/// assembler.push(&StreamEvent::TextDelta("Hello, ".into()));
/// assembler.push(&StreamEvent::TextDelta("world".into()));
/// assembler.push(&StreamEvent::ToolCallDelta { index: 0, id: Some("c1".into()), name: Some("add".into()), arguments: "{\"a\":".into() });
/// assembler.push(&StreamEvent::ToolCallDelta { index: 0, id: None, name: None, arguments: "1}".into() });
/// let completion = assembler.finish();
/// assert_eq!(completion.text.as_deref(), Some("Hello, world"));
/// assert_eq!(completion.tool_calls[0].arguments, "{\"a\":1}");
/// ```
#[derive(Debug, Clone, Default)]
pub struct StreamAssembler {
    text: Option<String>,
    reasoning: Option<String>,
    tool_calls: Vec<(usize, ToolCall)>,
    /// Why the model stopped, when the stream said so.
    pub finish_reason: Option<FinishReason>,
    /// Usage reported by the stream (or set by the caller).
    pub usage: Usage,
}

impl StreamAssembler {
    /// Adds one event. A [`Done`](StreamEvent::Done) event replaces everything gathered so far with
    /// its completion.
    pub fn push(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta(delta) => {
                self.text.get_or_insert_with(String::new).push_str(delta);
            }
            StreamEvent::ReasoningDelta(delta) => {
                self.reasoning
                    .get_or_insert_with(String::new)
                    .push_str(delta);
            }
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => {
                let position = match self.tool_calls.iter().position(|(i, _)| i == index) {
                    Some(position) => position,
                    None => {
                        self.tool_calls
                            .push((*index, ToolCall::new(String::new(), String::new(), "")));
                        self.tool_calls.len() - 1
                    }
                };
                let call = &mut self.tool_calls[position].1;
                if let Some(id) = id.as_deref().filter(|id| !id.is_empty()) {
                    call.id = id.to_owned();
                }
                // Most servers send the name once; a few repeat it on every delta, a few send it in
                // pieces: a repeat is ignored, a piece appended.
                if let Some(name) = name.as_deref().filter(|name| !name.is_empty())
                    && call.name != name
                {
                    call.name.push_str(name);
                }
                call.arguments.push_str(arguments);
            }
            StreamEvent::Done(completion) => {
                self.text.clone_from(&completion.text);
                self.reasoning.clone_from(&completion.reasoning);
                self.tool_calls = completion.tool_calls.iter().cloned().enumerate().collect();
                self.finish_reason.clone_from(&completion.finish_reason);
                self.usage = completion.usage;
            }
        }
    }

    /// The completion gathered so far. Tool calls are ordered by index; a call that never got an id
    /// is given `call_<index>`.
    pub fn finish(mut self) -> Completion {
        self.tool_calls.sort_by_key(|(index, _)| *index);
        let tool_calls = self
            .tool_calls
            .into_iter()
            .map(|(index, mut call)| {
                if call.id.is_empty() {
                    call.id = format!("call_{index}");
                }
                call
            })
            .collect();
        Completion {
            text: self.text,
            tool_calls,
            reasoning: self.reasoning,
            finish_reason: self.finish_reason,
            usage: self.usage,
            model: None,
            provider_state: None,
        }
    }
}

/// Why an LM call failed. Transient kinds ([`is_transient`](LmError::is_transient)) are retried by
/// clients that retry.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[non_exhaustive]
pub enum LmError {
    /// HTTP 429: too many requests.
    #[error("rate limited by the LM provider{}: {message}", retry_after.map(|d| format!(" (retry after {d:?})")).unwrap_or_default())]
    RateLimited {
        /// The provider's `Retry-After`, when given.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The prompt does not fit the model's context window.
    #[error("the prompt exceeds the model's context window: {message}")]
    ContextWindowExceeded {
        /// The provider's message.
        message: String,
    },
    /// HTTP 5xx.
    #[error("the LM server failed (HTTP {status}): {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// The provider rejected the request (HTTP 4xx other than 429).
    #[error("the LM provider rejected the request (HTTP {status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// No answer within the time limit.
    #[error("the LM call timed out after {after:?}")]
    Timeout {
        /// The time limit.
        after: Duration,
    },
    /// The server could not be reached.
    #[error("could not reach the LM server: {message}")]
    Connect {
        /// What the transport reported.
        message: String,
    },
    /// The server answered with something that is not a valid completion.
    #[error("the LM server sent an invalid response: {message}")]
    InvalidResponse {
        /// What was wrong.
        message: String,
    },
    /// The server's response was longer than the client allows
    /// ([`OpenAiLmBuilder::max_response_bytes`](crate::lm::OpenAiLmBuilder::max_response_bytes)):
    /// the client stopped reading it. Not retried.
    #[error(
        "the LM server's response exceeds the client's limit of {limit} bytes; it was not read \
         further"
    )]
    ResponseTooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// A scripted LM ran out of replies.
    #[error("the scripted LM has no reply left for call {call}")]
    NoMoreReplies {
        /// The 1-based number of the call that found no reply.
        call: usize,
    },
    /// No LM was configured for a module, its call (or an enclosing `CallConfig::scope`), or
    /// globally.
    #[error(
        "no LM configured: give one to the module or the call (or run it in a `CallConfig::scope`), or set a global one"
    )]
    NotConfigured,
    /// A predictor names a model hint no LM is registered under, for its call or globally.
    #[error(
        "no model is registered as `{hint}` (registered: {}); register one with \
         `signet::module::configure_model` or `CallConfig::with_model`",
        if registered.is_empty() { "none".to_owned() } else { registered.join(", ") }
    )]
    UnknownModel {
        /// The hint the predictor names.
        hint: String,
        /// The names models are registered under, for the call or globally, in order.
        registered: Vec<String>,
    },
    /// The client stopped reading the reply while it streamed, because an output check had
    /// already failed on what was written (a figure no tool returned, a loop): the module
    /// re-asks the model or fails with the check's failure
    /// ([`crate::module::check`]). Not retried.
    #[error("the reply was stopped while it streamed: {reason}")]
    Stopped {
        /// The check's failure, in words.
        reason: String,
    },
    /// The [journal](crate::journal) a durable run's LM calls go through failed, or a replayed
    /// call did not match what it recorded.
    #[error("the run's journal failed: {message}")]
    Journal {
        /// What went wrong.
        message: String,
    },
}

impl LmError {
    /// The error's class as the OpenTelemetry `error.type` attribute records it: the HTTP status
    /// for a rejected or failed request (`429`, `500`, ..), else a name (`timeout`,
    /// `connection_error`, `context_window_exceeded`, ..).
    ///
    /// ```
    /// use signet::lm::LmError;
    /// let error = LmError::Server { status: 503, message: "busy".into() };
    /// assert_eq!(error.error_type(), "503");
    /// assert_eq!(LmError::NotConfigured.error_type(), "not_configured");
    /// ```
    pub fn error_type(&self) -> std::borrow::Cow<'static, str> {
        use std::borrow::Cow;
        Cow::Borrowed(match self {
            LmError::RateLimited { .. } => "429",
            LmError::Server { status, .. } | LmError::Rejected { status, .. } => {
                return Cow::Owned(status.to_string());
            }
            LmError::ContextWindowExceeded { .. } => "context_window_exceeded",
            LmError::Timeout { .. } => "timeout",
            LmError::Connect { .. } => "connection_error",
            LmError::InvalidResponse { .. } => "invalid_response",
            LmError::ResponseTooLarge { .. } => "response_too_large",
            LmError::NoMoreReplies { .. } => "no_more_replies",
            LmError::NotConfigured => "not_configured",
            LmError::UnknownModel { .. } => "unknown_model",
            LmError::Journal { .. } => "journal",
            LmError::Stopped { .. } => "stopped",
        })
    }

    /// Whether retrying the same request may succeed (rate limits, server errors, timeouts,
    /// connection failures).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            LmError::RateLimited { .. }
                | LmError::Server { .. }
                | LmError::Timeout { .. }
                | LmError::Connect { .. }
        )
    }
}
