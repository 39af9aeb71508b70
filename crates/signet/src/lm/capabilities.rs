//! What an LM supports ([`Capabilities`]): the presets for known servers and the setters.

use serde::{Deserialize, Serialize};

/// What an LM (or the server behind it) supports; adapters choose formats from this. Start from a
/// preset or the default and change what differs:
///
/// ```
/// use signet::lm::Capabilities;
/// let vllm = Capabilities::default().with_function_calling(true).with_response_schema(true);
/// assert!(vllm.function_calling && !vllm.json_object_schema);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// Native function calling (`tools=`).
    pub function_calling: bool,
    /// OpenAI structured outputs (`response_format: json_schema`).
    pub response_schema: bool,
    /// JSON mode (`response_format: json_object`).
    pub json_object: bool,
    /// Schema-constrained JSON through the `{"type": "json_object", "schema": ..}` extension
    /// (llama.cpp's server).
    pub json_object_schema: bool,
    /// The context window of one request in tokens, prompt and reply together, when known.
    /// ReAct keeps its prompts within it before sending ([context budget](crate::module::Limits::context_window)).
    pub context_window: Option<u32>,
    /// How many requests the server decodes at once (llama.cpp's slots), when it says.
    /// [`Evaluate`](crate::evaluate::Evaluate) runs that many examples at a time unless given a
    /// concurrency: more would only queue at the server. `None` (unknown, the default) leaves the
    /// caller's own default.
    pub parallel_requests: Option<u32>,
}

impl Default for Capabilities {
    /// What any OpenAI-compatible chat endpoint is assumed to support: text and JSON mode only.
    fn default() -> Self {
        Capabilities {
            function_calling: false,
            response_schema: false,
            json_object: true,
            json_object_schema: false,
            context_window: None,
            parallel_requests: None,
        }
    }
}

impl Capabilities {
    crate::shared::setters! {
        /// Sets native function calling (`tools=`).
        fn with_function_calling(on: bool) { function_calling = on }

        /// Sets OpenAI structured outputs (`response_format: json_schema`).
        fn with_response_schema(on: bool) { response_schema = on }

        /// Sets JSON mode (`response_format: json_object`).
        fn with_json_object(on: bool) { json_object = on }

        /// Sets llama.cpp's schema-constrained JSON (`{"type": "json_object", "schema": ..}`).
        fn with_json_object_schema(on: bool) { json_object_schema = on }

        /// Sets the context window of one request, in tokens.
        ///
        /// ```
        /// let caps = signet::lm::Capabilities::llama_cpp().with_context_window(8192);
        /// assert_eq!(caps.context_window, Some(8192));
        /// ```
        fn with_context_window(tokens: u32) { context_window = Some(tokens) }

        /// Sets how many requests the server decodes at once (at least 1).
        ///
        /// ```
        /// let caps = signet::lm::Capabilities::llama_cpp().with_parallel_requests(2);
        /// assert_eq!(caps.parallel_requests, Some(2));
        /// ```
        fn with_parallel_requests(requests: u32) { parallel_requests = Some(requests.max(1)) }
    }

    /// OpenAI's own API: native tools, structured outputs and JSON mode.
    ///
    /// ```
    /// let caps = signet::lm::Capabilities::openai();
    /// assert!(caps.function_calling && caps.response_schema && !caps.json_object_schema);
    /// ```
    pub fn openai() -> Capabilities {
        Capabilities::default()
            .with_function_calling(true)
            .with_response_schema(true)
    }

    /// Anthropic's Messages API ([`AnthropicLm`](crate::lm::AnthropicLm)): native tools and
    /// structured outputs (a JSON schema, `output_config.format`); no JSON mode.
    ///
    /// ```
    /// let caps = signet::lm::Capabilities::anthropic();
    /// assert!(caps.function_calling && caps.response_schema && !caps.json_object);
    /// ```
    pub fn anthropic() -> Capabilities {
        Capabilities::default()
            .with_function_calling(true)
            .with_response_schema(true)
            .with_json_object(false)
    }

    /// Google's Gemini API ([`GeminiLm`](crate::lm::GeminiLm)): native tools, structured
    /// outputs (`responseJsonSchema`) and JSON mode (`responseMimeType: application/json`).
    ///
    /// ```
    /// let caps = signet::lm::Capabilities::gemini();
    /// assert!(caps.function_calling && caps.response_schema && caps.json_object);
    /// ```
    pub fn gemini() -> Capabilities {
        Capabilities::default()
            .with_function_calling(true)
            .with_response_schema(true)
    }

    /// llama.cpp's server (`llama-server`, or the one `signet-local` runs): JSON mode, OpenAI
    /// structured outputs and its own schema extension `{"type": "json_object", "schema": ..}`
    /// (preferred by [`JsonAdapter::constrained`](crate::adapter::JsonAdapter::constrained), as it
    /// takes any schema). Native tool calls are left off: whether the model makes them depends on
    /// the server's chat template (`--jinja`) and on the model — turn the flag on when yours
    /// does, or wrap the LM in [`ConstrainedToolCalls`](crate::lm::ConstrainedToolCalls) for a
    /// model too small to call tools by itself.
    ///
    /// ```
    /// let caps = signet::lm::Capabilities::llama_cpp();
    /// assert!(caps.json_object_schema && caps.response_schema && !caps.function_calling);
    /// ```
    pub fn llama_cpp() -> Capabilities {
        Capabilities::default()
            .with_response_schema(true)
            .with_json_object_schema(true)
    }

    /// vLLM's OpenAI-compatible server (`vllm serve MODEL`, base URL `http://HOST:8000/v1`):
    /// native tool calls, structured outputs (`response_format: json_schema`, on by default) and
    /// JSON mode. llama.cpp's `{"type": "json_object", "schema": ..}` extension is not one of
    /// vLLM's response formats, so it is left off.
    ///
    /// Native tool calls must be switched on when the server starts: `--enable-auto-tool-choice`
    /// with the `--tool-call-parser` that fits the model (`hermes` for Qwen models, `llama3_json`
    /// for Llama 3.1, `mistral`, ..; some models also need `--chat-template`). A server started
    /// without them refuses the `tool_choice: "auto"` that ReAct and `Predict::tool` send (an
    /// HTTP 400, [`LmError::Rejected`](super::LmError::Rejected)); for such a server use
    /// `Capabilities::vllm().with_function_calling(false)` and ReAct runs in text mode.
    ///
    /// ```
    /// use signet::lm::{Capabilities, OpenAiLm};
    /// let caps = Capabilities::vllm();
    /// assert!(caps.function_calling && caps.response_schema && caps.json_object);
    /// assert!(!caps.json_object_schema);
    /// let lm = OpenAiLm::builder("Qwen/Qwen2.5-7B-Instruct")
    ///     .base_url("http://127.0.0.1:8000/v1")
    ///     .capabilities(Capabilities::vllm())
    ///     .build()
    ///     .unwrap();
    /// # let _ = lm;
    /// ```
    pub fn vllm() -> Capabilities {
        Capabilities::default()
            .with_function_calling(true)
            .with_response_schema(true)
    }

    /// Ollama's OpenAI-compatible endpoint (base URL `http://localhost:11434/v1`): native tool
    /// calls, structured outputs (a `json_schema` response format becomes Ollama's `format`) and
    /// JSON mode; no schema extension (a `schema` next to `json_object` is ignored).
    ///
    /// Nothing is switched on server-side, but tool calls work only with models whose template
    /// supports them (the "tools" models of Ollama's library): declare
    /// `Capabilities::ollama().with_function_calling(false)` for another model. Ollama does not
    /// read `tool_choice` or `parallel_tool_calls` (the model always decides, and may call several
    /// tools at once). The context size cannot be set through the OpenAI API: long ReAct runs need
    /// a model created with a larger `num_ctx` (a `Modelfile` with `PARAMETER num_ctx ..`).
    ///
    /// ```
    /// use signet::lm::{Capabilities, OpenAiLm};
    /// let caps = Capabilities::ollama();
    /// assert!(caps.function_calling && caps.response_schema && caps.json_object);
    /// assert!(!caps.json_object_schema);
    /// let lm = OpenAiLm::builder("qwen3:8b")
    ///     .base_url("http://127.0.0.1:11434/v1")
    ///     .capabilities(Capabilities::ollama())
    ///     .build()
    ///     .unwrap();
    /// # let _ = lm;
    /// ```
    pub fn ollama() -> Capabilities {
        Capabilities::default()
            .with_function_calling(true)
            .with_response_schema(true)
    }

    /// OpenRouter (base URL `https://openrouter.ai/api/v1`, its key sent as the bearer token):
    /// one endpoint for many providers' models, which passes native tool calls and
    /// `response_format` (`json_object`, `json_schema`) on to the providers that support them.
    ///
    /// What works depends on the model you name (`openai/gpt-4o-mini`, `qwen/qwen3-32b`, ..):
    /// OpenRouter's model list says which support tools and structured outputs. This preset
    /// declares all three for a model that does; turn off what yours lacks
    /// (`.with_response_schema(false)`, `.with_function_calling(false)`). A request with
    /// `"provider": {"require_parameters": true}` in its [`LmRequest::extra`](super::LmRequest::extra) is routed only to
    /// providers that support every parameter it sends.
    ///
    /// ```
    /// use signet::lm::{Capabilities, OpenAiLm};
    /// let caps = Capabilities::openrouter();
    /// assert!(caps.function_calling && caps.response_schema && caps.json_object);
    /// assert!(!caps.json_object_schema);
    /// let lm = OpenAiLm::builder("openai/gpt-4o-mini")
    ///     .base_url("https://openrouter.ai/api/v1")
    ///     .api_key("sk-or-...")
    ///     .capabilities(Capabilities::openrouter())
    ///     .build()
    ///     .unwrap();
    /// # let _ = lm;
    /// ```
    pub fn openrouter() -> Capabilities {
        Capabilities::default()
            .with_function_calling(true)
            .with_response_schema(true)
    }
}
