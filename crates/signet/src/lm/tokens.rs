//! Counting a request's prompt tokens before it is sent, to keep it within the context window.
use super::{Message, ToolDefinition};

/// A prompt's size in tokens, and whether it was counted with the model's own tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TokenCount {
    /// The tokens.
    pub tokens: usize,
    /// `true`: counted with the model's tiktoken encoding; `false`: estimated
    /// ([`CHARS_PER_TOKEN_ESTIMATE`] characters per token).
    pub exact: bool,
}

/// Characters per token in the estimate for models whose tokenizer is not known here. English
/// prose runs at about four characters per token in the common tokenizers and code and JSON at
/// fewer; three errs on the side of counting too many, so a prompt is cut a little early rather
/// than refused.
pub const CHARS_PER_TOKEN_ESTIMATE: usize = 3;

/// Tokens a chat message costs beyond its text (role and separators, as OpenAI's chat format
/// counts them).
const PER_MESSAGE: usize = 4;

/// Tokens counted for each image or audio part of a message: its real cost depends on the
/// provider, the image's size and detail, the clip's length; this is OpenAI's price of a
/// high-detail 1024×1024 image, so a prompt with media is cut early rather than refused.
pub const MEDIA_TOKEN_ESTIMATE: usize = 765;

/// Counts the prompt of a request to `model`: its messages (text, tool calls, call ids, and
/// [`MEDIA_TOKEN_ESTIMATE`] for each image or audio part) and its tool descriptors. OpenAI models (`gpt-4o`, `o3`, `gpt-4.1`, ..) are counted exactly with their
/// tiktoken encoding; any other model is estimated at [`CHARS_PER_TOKEN_ESTIMATE`] characters per
/// token.
///
/// ```
/// use signet::lm::{Message, count_prompt_tokens};
/// let messages = [Message::system("You are terse."), Message::user("Say hi.")];
/// let exact = count_prompt_tokens("gpt-4o", &messages, &[]);
/// assert!(exact.exact && exact.tokens < 20);
/// let estimated = count_prompt_tokens("SmolLM2-135M", &messages, &[]);
/// // 21 characters at three a token, and four tokens a message.
/// assert_eq!((estimated.tokens, estimated.exact), (7 + 2 * 4, false));
/// ```
pub fn count_prompt_tokens(
    model: &str,
    messages: &[Message],
    tools: &[ToolDefinition],
) -> TokenCount {
    let mut texts: Vec<&str> = Vec::new();
    let tools_json: Vec<String> = tools.iter().map(|t| t.to_value().to_string()).collect();
    for message in messages {
        texts.push(&message.content);
        for call in &message.tool_calls {
            texts.extend([
                call.id.as_str(),
                call.name.as_str(),
                call.arguments.as_str(),
            ]);
        }
        texts.extend(message.tool_call_id.as_deref());
    }
    texts.extend(tools_json.iter().map(String::as_str));
    let media: usize = messages.iter().map(|m| m.content.media().count()).sum();
    let overhead = PER_MESSAGE * messages.len() + MEDIA_TOKEN_ESTIMATE * media;
    match encoding(model) {
        Some(bpe) => TokenCount {
            tokens: overhead
                + texts
                    .iter()
                    .map(|text| bpe.encode_ordinary(text).len())
                    .sum::<usize>(),
            exact: true,
        },
        None => {
            let chars: usize = texts.iter().map(|text| text.chars().count()).sum();
            TokenCount {
                tokens: overhead + chars.div_ceil(CHARS_PER_TOKEN_ESTIMATE),
                exact: false,
            }
        }
    }
}

/// The tiktoken encoding of an OpenAI model, loaded once.
fn encoding(model: &str) -> Option<&'static tiktoken_rs::CoreBPE> {
    use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};
    match get_tokenizer(model)? {
        Tokenizer::O200kBase => Some(tiktoken_rs::o200k_base_singleton()),
        Tokenizer::Cl100kBase => Some(tiktoken_rs::cl100k_base_singleton()),
        _ => None,
    }
}
