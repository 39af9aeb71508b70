//! One adapted call: the inputs formatted by an [`Adapter`], sent to an [`Lm`], and the reply read
//! back into output fields. When the reply cannot be read the call is asked again, each retry
//! logged and counted in [`Usage::adapter_fallbacks`]: once in JSON mode when structured outputs
//! were used, then once in the adapter's [fallback](Adapter::fallback) format. An adapter whose
//! replies a second model reads ([`TwoStepAdapter`](crate::adapter::TwoStepAdapter)) has that
//! model's call made here too, as an adapted call of its own.
//!
//! This sits above the adapters (formats and parsers) and [`Error`]: it is where a reply that
//! cannot be read, a failed model call and an unusable input become one error.

use serde_json::{Map, Value};

use crate::adapter::{
    Adapter, AdapterName, ChatAdapter, Fields, ParseError, media, native, two_step,
};
use crate::error::Error;
use crate::lm::{
    Capabilities, Completion, Lm, LmError, LmOptions, LmRequest, ResponseFormat, Usage,
};
use crate::signature::{DynSignature, Field, FieldKind, descriptors};

/// The outcome of an adapted call.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptedReply {
    /// The output field values.
    pub outputs: Fields,
    /// The last completion (text, tool calls, reasoning).
    pub completion: Completion,
    /// Usage summed over every LM call made (fallbacks included).
    pub usage: Usage,
    /// The adapter that produced the outputs.
    pub adapter: AdapterName,
}

/// One adapted call: format with `adapter`, send to `lm`, parse. On a parse failure the call is
/// retried — once in JSON mode if structured outputs were used, then once with the adapter's
/// [`fallback`](Adapter::fallback) — each retry logged (`tracing::warn!`) and counted in
/// [`Usage::adapter_fallbacks`]. LM errors are returned as they are.
///
/// ```
/// use signet::adapter::{AdapterName, ChatAdapter};
/// use signet::lm::LmOptions;
/// use signet::testing::ScriptedLm;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let sig = signet::DynSignature::parse("question -> answer, count: int").unwrap();
/// // The first reply has no field markers: the call asks again in JSON.
/// let lm = ScriptedLm::texts(["Paris has 3 museums.", r#"{"answer": "Paris", "count": 3}"#]);
/// let inputs = serde_json::json!({"question": "How many museums?"}).as_object().unwrap().clone();
/// let reply = signet::adapted::run(&ChatAdapter::new(), &lm, &sig, &[], &inputs, &LmOptions::default())
///     .await
///     .unwrap();
/// assert_eq!(reply.outputs["count"], 3);
/// assert_eq!(reply.adapter, AdapterName::Json);
/// assert_eq!(reply.usage.adapter_fallbacks, 1);
/// # });
/// ```
pub async fn run(
    adapter: &dyn Adapter,
    lm: &dyn Lm,
    signature: &DynSignature,
    demos: &[Fields],
    inputs: &Fields,
    options: &LmOptions,
) -> Result<AdaptedReply, Error> {
    run_parsing_as(adapter, lm, signature, None, demos, inputs, options).await
}

/// [`run`], but the reply is read with `parse_as` (same fields, possibly looser types) instead of
/// `signature`. ReAct uses it to show the model a `Literal` of tool names while still reading an
/// unknown name, so that the mistake becomes an observation the model can act on.
pub async fn run_parsing_as(
    adapter: &dyn Adapter,
    lm: &dyn Lm,
    signature: &DynSignature,
    parse_as: Option<&DynSignature>,
    demos: &[Fields],
    inputs: &Fields,
    options: &LmOptions,
) -> Result<AdaptedReply, Error> {
    let call = Call {
        signature,
        parse_as,
        demos,
        inputs,
        options,
        tool_choice: None,
        extra: None,
    };
    run_counting(adapter, lm, &call, &mut Usage::default()).await
}

/// [`run_parsing_as`] that adds the usage of every LM call to `usage`, failed ones included (a
/// reply that cannot be parsed still cost its tokens).
pub(crate) async fn run_counting(
    adapter: &dyn Adapter,
    lm: &dyn Lm,
    call: &Call<'_>,
    usage: &mut Usage,
) -> Result<AdaptedReply, Error> {
    // A reply's usage is what this call spent (`attempt` records it); failed calls count too.
    let mut own = Usage::default();
    let result = run_call(adapter, lm, call, &mut own).await;
    *usage += own;
    result
}

async fn run_call(
    adapter: &dyn Adapter,
    lm: &dyn Lm,
    call: &Call<'_>,
    usage: &mut Usage,
) -> Result<AdaptedReply, Error> {
    check_media_inputs(call.signature, call.inputs)?;
    let error = match attempt(adapter, lm, call, None, usage).await {
        Ok(reply) => return Ok(reply),
        Err(Error::Parse(error)) => error,
        Err(other) => return Err(other),
    };
    let Some(fallback) = adapter.fallback(call.signature, call.inputs) else {
        return Err(Error::Parse(error));
    };
    note_fallback(adapter, fallback.as_ref(), &error, usage);
    attempt(&fallback, lm, call, None, usage).await
}

/// Says that a reply `adapter` could not read (`error`) is asked for once more in `fallback`'s
/// format: a warning, and one more [`Usage::adapter_fallbacks`].
pub(crate) fn note_fallback(
    adapter: &dyn Adapter,
    fallback: &dyn Adapter,
    error: &ParseError,
    usage: &mut Usage,
) {
    tracing::warn!(
        from = %adapter.name(),
        to = %fallback.name(),
        %error,
        "reply could not be parsed; retrying once with the fallback adapter"
    );
    usage.adapter_fallbacks += 1;
}

/// The outputs in a reply's `text`: read with `adapter`'s [`parse`](Adapter::parse) as
/// `parse_as`, or — for an adapter whose replies a model reads ([`Adapter::extraction`]) — by that
/// model, shown `signature`'s outputs (its usage added to `usage`; its LM failure returned).
pub(crate) async fn read_outputs(
    adapter: &dyn Adapter,
    signature: &DynSignature,
    parse_as: &DynSignature,
    text: &str,
    usage: &mut Usage,
) -> Result<Result<Fields, ParseError>, crate::lm::LmError> {
    match adapter.extraction() {
        // Boxed: the extraction's state stays out of every other call's future.
        Some(extraction) => {
            Box::pin(extract(
                extraction.as_ref(),
                signature,
                parse_as,
                text,
                usage,
            ))
            .await
        }
        None => Ok(adapter.parse(parse_as, text)),
    }
}

/// What one adapted call is about.
pub(crate) struct Call<'a> {
    pub(crate) signature: &'a DynSignature,
    pub(crate) parse_as: Option<&'a DynSignature>,
    pub(crate) demos: &'a [Fields],
    pub(crate) inputs: &'a Fields,
    pub(crate) options: &'a LmOptions,
    /// A tool choice for calls that send tools natively (dropped otherwise, as DSPy drops it).
    pub(crate) tool_choice: Option<crate::lm::ToolChoice>,
    /// Extra top-level request fields.
    pub(crate) extra: Option<&'a Map<String, Value>>,
}

async fn attempt(
    adapter: &dyn Adapter,
    lm: &dyn Lm,
    call: &Call<'_>,
    format_override: Option<ResponseFormat>,
    usage: &mut Usage,
) -> Result<AdaptedReply, Error> {
    let signature = call.signature;
    let native = prepare_native(adapter, signature, call.inputs, lm.capabilities())?;
    let format_signature = native.as_ref().map_or(signature, |n| &n.processed);
    let mut request = LmRequest::new(adapter.format(format_signature, call.demos, call.inputs));
    request.options = call.options.clone();
    adapter.configure(
        format_signature,
        call.inputs,
        &mut request,
        lm.capabilities(),
    );
    if format_override.is_some() {
        request.response_format = format_override;
    }
    if let Some(native) = &native {
        request.tools = native.tools.clone();
        request.parallel_tool_calls = adapter.parallel_tool_calls();
        if request.parallel_tool_calls.is_some() {
            request.tool_choice = Some(crate::lm::ToolChoice::Auto);
        }
        if let Some(choice) = &call.tool_choice {
            request.tool_choice = Some(choice.clone());
        }
    }
    if let Some(extra) = call.extra {
        request
            .extra
            .extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let completion = lm.complete(&request).await?;
    *usage += completion.usage;
    let text = completion.text.as_deref().unwrap_or_default();
    let parse_signature = match (&native, call.parse_as) {
        (Some(native), _) => &native.processed,
        (None, Some(parse_as)) => parse_as,
        (None, None) => signature,
    };
    let parsed = match &native {
        // The model called tools instead of answering: the text outputs are absent (null), the
        // tool calls are the result.
        Some(native) if text.is_empty() && !completion.tool_calls.is_empty() => {
            Ok(native::merge(signature, Fields::new(), native, &completion))
        }
        _ if text.is_empty() => Err(ParseError::EmptyResponse {
            adapter: adapter.name(),
        }),
        Some(native) => read_outputs(adapter, format_signature, parse_signature, text, usage)
            .await?
            .map(|outputs| native::merge(signature, outputs, native, &completion)),
        // Parsed in place without `read_outputs`' future: 118 instructions less a call (callgrind).
        None if adapter.extraction().is_none() => adapter.parse(parse_signature, text),
        None => read_outputs(adapter, signature, parse_signature, text, usage).await?,
    };
    match parsed {
        Ok(outputs) => Ok(AdaptedReply {
            outputs,
            completion,
            usage: *usage,
            adapter: adapter.name(),
        }),
        // DSPy's retry in JSON mode, where the LM has one (Anthropic's API has none).
        Err(error)
            if matches!(
                request.response_format,
                Some(ResponseFormat::JsonSchema { .. })
            ) && lm.capabilities().json_object =>
        {
            tracing::warn!(
                adapter = %adapter.name(),
                %error,
                "structured output could not be parsed; retrying once in JSON mode"
            );
            usage.adapter_fallbacks += 1;
            Box::pin(attempt(
                adapter,
                lm,
                call,
                Some(ResponseFormat::JsonObject),
                usage,
            ))
            .await
        }
        Err(error) => Err(Error::Parse(error)),
    }
}

/// The outputs of `signature` (read as `parse_as`'s) that `extraction` finds in the main model's
/// `text`; the usage of its calls is added to `usage`. An LM failure is returned as it is; an
/// answer it cannot read is a [`ParseError::Extraction`].
pub(crate) async fn extract(
    extraction: &dyn Lm,
    signature: &DynSignature,
    parse_as: &DynSignature,
    text: &str,
    usage: &mut Usage,
) -> Result<Result<Fields, ParseError>, LmError> {
    let shown = two_step::extractor(signature);
    let read = (!std::ptr::eq(signature, parse_as)).then(|| two_step::extractor(parse_as));
    let inputs: Fields = [("text".to_owned(), Value::String(text.to_owned()))]
        .into_iter()
        .collect();
    let call = Call {
        signature: &shown,
        parse_as: read.as_ref(),
        demos: &[],
        inputs: &inputs,
        options: &LmOptions::default(),
        tool_choice: None,
        extra: None,
    };
    let result = Box::pin(run_counting(&ChatAdapter::new(), extraction, &call, usage)).await;
    let reason = match result {
        Ok(reply) => return Ok(Ok(reply.outputs)),
        Err(Error::Lm(error)) => return Err(error),
        Err(Error::Parse(error)) => error.to_string(),
        Err(other) => other.to_string(),
    };
    Ok(Err(ParseError::Extraction {
        adapter: AdapterName::TwoStep,
        response: text.to_owned(),
        reason,
    }))
}

/// Native function calling applies when the adapter enables it, the signature has a `ToolCalls`
/// output and a `list[Tool]` input, and the LM supports function calling.
fn prepare_native(
    adapter: &dyn Adapter,
    signature: &DynSignature,
    inputs: &Fields,
    capabilities: Capabilities,
) -> Result<Option<native::NativeTools>, Error> {
    if !adapter.native_function_calling() || !capabilities.function_calling {
        return Ok(None);
    }
    let of_kind = |fields: &[Field], kind| fields.iter().find(|f| f.kind() == kind).cloned();
    let Some(output) = of_kind(signature.outputs(), FieldKind::ToolCalls) else {
        return Ok(None);
    };
    let Some(input) = of_kind(signature.inputs(), FieldKind::Tools) else {
        return Err(Error::InvalidSignature {
            message: format!(
                "output `{}` holds tool calls but no input field holds the tools (`Tools`, DSPy's \
                 list[Tool]): native function calling needs the tools as an input",
                output.name()
            ),
        });
    };
    let tools =
        descriptors(inputs.get(input.name())).map_err(|problem| Error::InvalidSignature {
            message: format!("input `{}`: {problem}", input.name()),
        })?;
    let processed = signature
        .without_field(output.name())
        .without_field(input.name());
    Ok(Some(native::NativeTools {
        processed,
        tools,
        output_field: output.name().to_owned(),
    }))
}

/// Every media input of `signature` in `inputs` holds only images and audio:
/// [`Error::InvalidMedia`](Error::InvalidMedia) naming the first that does not.
pub(crate) fn check_media_inputs(signature: &DynSignature, inputs: &Fields) -> Result<(), Error> {
    let media = signature
        .inputs()
        .iter()
        .filter(|f| f.kind() == FieldKind::Media);
    for field in media {
        if let Some(value) = inputs.get(field.name()) {
            media::check(value).map_err(|source| Error::InvalidMedia {
                field: field.name().to_owned(),
                source,
            })?;
        }
    }
    Ok(())
}
