//! Elicitation: a server asks the user a question in the middle of a call (`elicitation/create`);
//! the application answers it, declines it or cancels it.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData};
use serde_json::Value;

/// A server's question to the user, as the application's
/// [handler](super::McpClientBuilder::elicitation) gets it.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// The label of the server that asks.
    pub server: String,
    /// What the server says it needs, for the user.
    pub message: String,
    /// What kind of answer it wants.
    pub kind: ElicitationKind,
}

/// The two kinds of MCP elicitation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitationKind {
    /// A form: the answer is a JSON object matching `schema` (flat, with primitive properties).
    Form {
        /// The requested schema, as the server sent it.
        schema: Value,
    },
    /// The user should visit `url` (to sign in, pay, ..) outside the client; accepting means they
    /// agreed to go.
    Url {
        /// Where to send the user.
        url: String,
        /// The server's id for this elicitation (empty when the protocol has none).
        id: String,
    },
}

/// The application's answer to an [`Elicitation`].
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// The user answered: for a form, the object matching its schema (checked before it is sent);
    /// for a URL, `Value::Null`.
    Accept(Value),
    /// The user said no; the server may carry on without the answer.
    Decline,
    /// The user dismissed the question; the server should stop what it was doing.
    Cancel,
}

type Answerer = Arc<dyn Fn(Elicitation) -> BoxFuture<'static, ElicitationAnswer> + Send + Sync>;

/// The application's handler of elicitations (see
/// [`McpClientBuilder::elicitation`](super::McpClientBuilder::elicitation)).
#[derive(Clone)]
pub(super) struct ElicitationHandler(Answerer);

impl std::fmt::Debug for ElicitationHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ElicitationHandler")
    }
}

impl ElicitationHandler {
    pub(super) fn new<F, Fut>(handler: F) -> Self
    where
        F: Fn(Elicitation) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ElicitationAnswer> + Send + 'static,
    {
        ElicitationHandler(Arc::new(move |request| handler(request).boxed()))
    }

    /// Asks the application, and checks a form answer against the requested schema: an answer
    /// that does not match is not sent; the server gets an error saying what was wrong.
    pub(super) async fn answer(
        &self,
        server: &str,
        request: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let (message, kind) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(&requested_schema).map_err(|e| {
                    ErrorData::invalid_params(format!("unreadable requested schema: {e}"), None)
                })?;
                (message, ElicitationKind::Form { schema })
            }
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => (
                message,
                ElicitationKind::Url {
                    url,
                    id: elicitation_id,
                },
            ),
            _ => {
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
        };
        let elicitation = Elicitation {
            server: server.to_owned(),
            message,
            kind,
        };
        let schema = match &elicitation.kind {
            ElicitationKind::Form { schema } => Some(schema.clone()),
            ElicitationKind::Url { .. } => None,
        };
        match (self.0)(elicitation).await {
            ElicitationAnswer::Accept(content) => match schema {
                Some(schema) => {
                    check_answer(&schema, &content)?;
                    Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
                }
                None => Ok(ElicitResult::new(ElicitationAction::Accept)),
            },
            ElicitationAnswer::Decline => Ok(ElicitResult::new(ElicitationAction::Decline)),
            ElicitationAnswer::Cancel => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        }
    }
}

/// Whether a form answer matches the requested schema; the error lists every mismatch.
fn check_answer(schema: &Value, content: &Value) -> Result<(), ErrorData> {
    let validator = jsonschema::validator_for(schema).map_err(|e| {
        ErrorData::invalid_params(format!("the requested schema does not compile: {e}"), None)
    })?;
    let problems: Vec<String> = validator
        .iter_errors(content)
        .map(|error| {
            let at = error.instance_path().to_string();
            if at.is_empty() {
                error.to_string()
            } else {
                format!("{at}: {error}")
            }
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    tracing::warn!(
        ?problems,
        "the application's elicitation answer does not match the schema"
    );
    Err(ErrorData::invalid_params(
        format!(
            "the client's answer does not match the requested schema: {}",
            problems.join("; ")
        ),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_answer_is_checked_against_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
            "required": ["name"]
        });
        assert!(check_answer(&schema, &json!({"name": "Ada", "age": 36})).is_ok());
        let error = check_answer(&schema, &json!({"age": -1})).unwrap_err();
        assert!(
            error.message.contains("\"name\" is a required property"),
            "{}",
            error.message
        );
        assert!(
            error
                .message
                .contains("/age: -1 is less than the minimum of 0"),
            "{}",
            error.message
        );
    }
}
