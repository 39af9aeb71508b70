//! Native tool calls for models that do not make them on their own: the reply is constrained to a
//! JSON list of calls by a decoding schema, then turned back into tool calls.

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::{Value, json};

use super::{
    Capabilities, Completion, FinishReason, Lm, LmError, LmRequest, ResponseFormat, StreamEvent,
    ToolCall, ToolChoice,
};
use crate::signature::call_branch;

mod stream;

/// Makes any [`Lm`] that supports schema-constrained replies call tools natively, however small
/// its model.
///
/// Small models rarely start a tool call by themselves (SmolLM2-135M never does), so
/// `tool_choice: "auto"` gives only text. Around such an LM, a request that offers tools is sent
/// with a decoding schema instead: the reply must be a JSON list of calls,
/// `[{"name": "add", "arguments": {"a": 2, "b": 3}}]`, each naming one of the tools with
/// arguments that follow that tool's schema. The list becomes [`Completion::tool_calls`] (ids
/// `call_<n>`, numbered through the conversation), so modules see an ordinary native tool call.
///
/// * `tool_choice` `auto` (or unset): the reply is either a list of calls or the answer — the
///   answer follows the request's own `response_format` schema when it has one (so a constrained
///   adapter still gets its JSON), else it is a JSON string, returned as the text.
/// * `required`: only a list of calls; `Function(name)`: only calls of that tool;
///   `parallel_tool_calls: false`: at most one call, else at most
///   [`max_calls`](Self::max_calls). `none`, or no tools: the request is passed on unchanged.
///
/// The `tools` stay in the request so that the server's chat template can describe them to the
/// model (llama.cpp's server renders them with a tool-aware template and applies the schema to
/// the reply; [`signet_local`](https://docs.rs/signet-local) serves one). A reply that breaks the
/// contract — not JSON, or not a list where only calls were allowed — is
/// [`LmError::InvalidResponse`], never a silent empty call list.
///
/// [`complete`](Lm::complete) reads the reply whole; [`stream`](Lm::stream) reads it as it
/// arrives, reporting each call as soon as its name is known and its arguments as the model
/// writes them (see there).
///
/// ```
/// use signet::lm::{Capabilities, Completion, ConstrainedToolCalls, Lm, LmRequest, Message, ToolChoice, ToolDefinition};
/// use signet::testing::ScriptedLm;
/// use serde_json::json;
///
/// let inner = ScriptedLm::texts([r#"[{"name": "add", "arguments": {"a": 2, "b": 3}}]"#])
///     .with_capabilities(Capabilities::llama_cpp());
/// let lm = ConstrainedToolCalls::new(inner);
/// assert!(lm.capabilities().function_calling);
///
/// let mut request = LmRequest::new(vec![Message::user("Add 2 and 3.")]);
/// request.tools = vec![ToolDefinition::new("add", "Add.", json!({"type": "object",
///     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}))];
/// request.tool_choice = Some(ToolChoice::Required);
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let reply = lm.complete(&request).await.unwrap();
/// assert_eq!(reply.tool_calls[0].name, "add");
/// assert_eq!(reply.tool_calls[0].args().unwrap(), json!({"a": 2, "b": 3}));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ConstrainedToolCalls<L> {
    inner: L,
    max_calls: Option<usize>,
    calls_only_kwargs: Option<Value>,
}

impl<L: Lm> ConstrainedToolCalls<L> {
    /// Wraps `inner`, which must support a schema constraint on the reply
    /// ([`Capabilities::response_schema`] or [`Capabilities::json_object_schema`]); calls that
    /// offer tools fail with [`LmError::InvalidResponse`] otherwise.
    pub fn new(inner: L) -> ConstrainedToolCalls<L> {
        ConstrainedToolCalls {
            inner,
            max_calls: None,
            calls_only_kwargs: None,
        }
    }

    crate::shared::setters! {
        /// The most calls one reply may hold (default: as many as the request offers tools, so each
        /// tool can be called once per turn). Small models tend to repeat a call until the token
        /// limit cuts the list off; the bound ends the list instead.
        ///
        /// ```
        /// use signet::lm::ConstrainedToolCalls;
        /// use signet::testing::ScriptedLm;
        /// let lm = ConstrainedToolCalls::new(ScriptedLm::texts(["[]"])).max_calls(3);
        /// # let _ = lm;
        /// ```
        fn max_calls(max_calls: usize) { max_calls = Some(max_calls.max(1)) }

        /// When a reply may only be calls (`tool_choice` `required` or a named tool), sends `kwargs`
        /// to the server's chat template as `chat_template_kwargs` (a request extension of llama.cpp's
        /// and vLLM's servers), so that the template can open the assistant's turn as its examples of
        /// calls open: a small model then continues a call the way its demos show one instead of
        /// being forced into a different first token by the decoding schema. signet-local's template
        /// opens the turn with `<tool_call>` when given `{"tool_call_only": true}`. Kwargs the request
        /// already carries are kept.
        ///
        /// ```
        /// use serde_json::json;
        /// use signet::lm::ConstrainedToolCalls;
        /// use signet::testing::ScriptedLm;
        /// let lm = ConstrainedToolCalls::new(ScriptedLm::texts(["[]"]))
        ///     .with_calls_only_template_kwargs(json!({"tool_call_only": true}));
        /// # let _ = lm;
        /// ```
        fn with_calls_only_template_kwargs(kwargs: Value) { calls_only_kwargs = Some(kwargs) }
    }

    /// The wrapped LM.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The request actually sent: the reply constrained to calls (or the answer).
    fn constrained(&self, request: &LmRequest) -> Result<LmRequest, LmError> {
        let max_calls = self.max_calls.unwrap_or(request.tools.len());
        let schema = reply_schema(request, max_calls)?;
        let capabilities = self.inner.capabilities();
        let format = if capabilities.json_object_schema {
            ResponseFormat::Raw(json!({"type": "json_object", "schema": schema}))
        } else if capabilities.response_schema {
            ResponseFormat::JsonSchema {
                name: "tool_calls".to_owned(),
                schema,
                strict: false,
            }
        } else {
            return Err(LmError::InvalidResponse {
                message: format!(
                    "ConstrainedToolCalls needs an LM that constrains replies to a JSON schema; \
                     `{}` supports neither `response_schema` nor `json_object_schema`",
                    self.inner.model()
                ),
            });
        };
        let mut sent = request.clone();
        let calls_only = !matches!(request.tool_choice, None | Some(ToolChoice::Auto));
        if let (true, Some(Value::Object(kwargs))) = (calls_only, &self.calls_only_kwargs) {
            let entry = sent
                .extra
                .entry("chat_template_kwargs")
                .or_insert_with(|| json!({}));
            if let Value::Object(existing) = entry {
                for (key, value) in kwargs {
                    existing.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
        }
        sent.response_format = Some(format);
        // The constraint decides; the server only renders the tools into the prompt.
        sent.tool_choice = Some(ToolChoice::Auto);
        Ok(sent)
    }
}

/// Whether a request offers tools that the model may call.
fn offers_tools(request: &LmRequest) -> bool {
    !request.tools.is_empty() && request.tool_choice != Some(ToolChoice::None)
}

/// The schema of a reply to `request`: a list of at most `max_calls` calls, or (with `auto`) the
/// answer.
fn reply_schema(request: &LmRequest, max_calls: usize) -> Result<Value, LmError> {
    let only: Option<Vec<&str>> = match &request.tool_choice {
        Some(ToolChoice::Function(name)) => Some(vec![name.as_str()]),
        Some(ToolChoice::OneOf(names)) => Some(names.iter().map(String::as_str).collect()),
        _ => None,
    };
    let mut branches = Vec::new();
    for tool in &request.tools {
        if only
            .as_ref()
            .is_some_and(|only| !only.contains(&tool.name.as_str()))
        {
            continue;
        }
        branches.push(call_branch(
            &[],
            ("name", &tool.name),
            ("arguments", tool.resolved_parameters()),
        ));
    }
    if branches.is_empty() {
        // Only a `tool_choice` naming a tool not offered leaves none (the request has tools).
        return Err(LmError::InvalidResponse {
            message: format!(
                "tool_choice names `{}`, which is not among the tools",
                only.unwrap_or_default().join("`, `")
            ),
        });
    }
    let item = if branches.len() == 1 {
        branches.remove(0)
    } else {
        json!({"anyOf": branches})
    };
    let max_items = if request.parallel_tool_calls == Some(false) {
        1
    } else {
        max_calls
    };
    let calls = json!({"type": "array", "items": item, "minItems": 1, "maxItems": max_items});
    let auto = matches!(request.tool_choice, None | Some(ToolChoice::Auto));
    if !auto {
        return Ok(calls);
    }
    let answer = match &request.response_format {
        Some(ResponseFormat::JsonSchema { schema, .. }) => schema.clone(),
        Some(ResponseFormat::Raw(raw)) => raw
            .get("schema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"})),
        Some(ResponseFormat::JsonObject) => json!({"type": "object"}),
        Some(ResponseFormat::Text) | None => json!({"type": "string"}),
    };
    Ok(json!({"anyOf": [calls, answer]}))
}

/// The reply read back: a list becomes tool calls, anything else the answer.
fn read_reply(request: &LmRequest, mut completion: Completion) -> Result<Completion, LmError> {
    let text = completion.text.take().unwrap_or_default();
    let only_calls = !matches!(request.tool_choice, None | Some(ToolChoice::Auto));
    let value: Value = match serde_json::from_str(text.trim()) {
        Ok(value) => value,
        Err(error) if only_calls => {
            return Err(LmError::InvalidResponse {
                message: format!(
                    "the reply was constrained to a JSON list of tool calls but is not JSON \
                     ({error}; finish reason {:?}): {text}",
                    completion.finish_reason
                ),
            });
        }
        // An answer cut off by the token limit: the adapter reports what it can read of it.
        Err(_) => {
            completion.text = Some(text);
            return Ok(completion);
        }
    };
    match value {
        Value::Array(calls) => {
            let earlier = request.tool_calls_so_far();
            let mut tool_calls = Vec::with_capacity(calls.len());
            for (offset, call) in calls.into_iter().enumerate() {
                let name = call.get("name").and_then(Value::as_str);
                let (Some(name), Some(arguments)) = (name, call.get("arguments")) else {
                    return Err(LmError::InvalidResponse {
                        message: format!("a tool call must have `name` and `arguments`: {call}"),
                    });
                };
                tool_calls.push(ToolCall::new(
                    format!("call_{}", earlier + offset),
                    name,
                    arguments.to_string(),
                ));
            }
            completion.tool_calls = tool_calls;
            completion.finish_reason = Some(FinishReason::ToolCalls);
        }
        _ if only_calls => {
            return Err(LmError::InvalidResponse {
                message: format!(
                    "the reply was constrained to a JSON list of tool calls but is not a list: {text}"
                ),
            });
        }
        Value::String(answer)
            if matches!(request.response_format, None | Some(ResponseFormat::Text)) =>
        {
            completion.text = Some(answer);
        }
        _ => completion.text = Some(text),
    }
    Ok(completion)
}

impl<L: Lm> Lm for ConstrainedToolCalls<L> {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        Box::pin(async move {
            if !offers_tools(request) {
                return self.inner.complete(request).await;
            }
            let sent = self.constrained(request)?;
            let completion = self.inner.complete(&sent).await?;
            read_reply(request, completion)
        })
    }

    /// Requests without tools stream from the inner LM unchanged. With tools, the constrained
    /// request is streamed from the inner LM and its text read as it arrives (no task is spawned:
    /// dropping the stream drops the inner one, which cancels its request):
    ///
    /// * A list of calls: for each call, a [`StreamEvent::ToolCallDelta`] with its `index`, its
    ///   `id` (`call_<n>`, numbered through the conversation) and its `name` (and empty
    ///   arguments) as soon as the name's string is complete, then deltas whose `arguments`
    ///   concatenate to the exact raw JSON text of the call's `"arguments"` value, as the model
    ///   writes it (arguments written before the name are held, and follow the name's delta).
    /// * The answer (`tool_choice` auto): [`StreamEvent::TextDelta`]s of the answer's text — a
    ///   JSON string's decoded content, or, under the request's own `response_format`, the reply
    ///   as it is.
    /// * [`StreamEvent::ReasoningDelta`]s pass through; the inner LM's own tool-call deltas are
    ///   dropped (the constrained text says what was called).
    ///
    /// The stream ends with [`StreamEvent::Done`] holding exactly what
    /// [`complete`](Lm::complete) returns for the same reply (its calls' arguments as compact
    /// JSON), or with the error it gives. The deltas are what could be read so far: a reply that
    /// turns out to break the contract, or to be cut off, ends with that error or with the raw
    /// text as the answer, after the deltas already sent. An error of the inner stream is
    /// passed on and ends the stream; an inner stream that ends without `Done` ends with
    /// [`LmError::InvalidResponse`].
    ///
    /// ```
    /// use futures::StreamExt;
    /// use signet::lm::{Capabilities, ConstrainedToolCalls, Lm, LmRequest, Message, StreamEvent, ToolChoice, ToolDefinition};
    /// use signet::testing::ScriptedLm;
    /// use serde_json::json;
    ///
    /// let inner = ScriptedLm::texts([r#"[{"name": "add", "arguments": {"a": 2, "b": 3}}]"#])
    ///     .with_capabilities(Capabilities::llama_cpp());
    /// let lm = ConstrainedToolCalls::new(inner);
    /// let mut request = LmRequest::new(vec![Message::user("Add 2 and 3.")]);
    /// request.tools = vec![ToolDefinition::new("add", "Add.", json!({"type": "object"}))];
    /// request.tool_choice = Some(ToolChoice::Required);
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let events: Vec<StreamEvent> = lm.stream(&request).map(Result::unwrap).collect().await;
    /// let StreamEvent::ToolCallDelta { id, name, .. } = &events[0] else { panic!() };
    /// assert_eq!((id.as_deref(), name.as_deref()), (Some("call_0"), Some("add")));
    /// let arguments: String = events.iter().filter_map(|event| match event {
    ///     StreamEvent::ToolCallDelta { arguments, .. } => Some(arguments.as_str()),
    ///     _ => None,
    /// }).collect();
    /// assert_eq!(arguments, r#"{"a": 2, "b": 3}"#);
    /// let Some(StreamEvent::Done(done)) = events.last() else { panic!() };
    /// assert_eq!(done.tool_calls[0].arguments, r#"{"a":2,"b":3}"#);
    /// # });
    /// ```
    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        use futures::StreamExt;
        if !offers_tools(request) {
            return self.inner.stream(request);
        }
        match self.constrained(request) {
            Ok(sent) => stream::reply_events(&self.inner, request, sent),
            Err(error) => futures::stream::iter([Err(error)]).boxed(),
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            function_calling: true,
            ..self.inner.capabilities()
        }
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

#[cfg(test)]
mod tests;
