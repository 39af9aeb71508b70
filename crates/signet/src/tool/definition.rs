//! A tool as the model is offered it: OpenAI's function descriptor, typed.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

/// What is wrong with a tool descriptor ([`ToolDefinition::from_descriptor`]); each variant holds
/// the JSON it was given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DescriptorError {
    /// The descriptor (or its `function`) is not a JSON object.
    #[error("a tool descriptor must be an object, got {got}")]
    NotAnObject {
        /// What was given.
        got: String,
    },
    /// It has no string `name`.
    #[error("a tool descriptor needs a string `name`, got {got}")]
    NoName {
        /// What was given.
        got: String,
    },
    /// Its `description` is neither a string nor null.
    #[error("tool `{tool}`: `description` must be a string, got {got}")]
    DescriptionNotText {
        /// The tool's name.
        tool: String,
        /// The `description` given.
        got: String,
    },
}

/// One tool offered for native function calling ([`LmRequest::tools`](crate::lm::LmRequest::tools)):
/// its name, what it does and its argument schema. It goes on the wire as OpenAI's descriptor,
/// `{"type": "function", "function": {"name", "description", "parameters"}}`, and is read from
/// that or from a bare function object; keys it has no field for (`strict`, a server's own)
/// are kept in [`extra`](Self::extra) and sent as given.
///
/// ```
/// use serde_json::json;
/// use signet::tool::ToolDefinition;
///
/// let lookup = ToolDefinition::new("lookup", "Look up a person.", json!({"type": "object"}));
/// assert_eq!(serde_json::to_value(&lookup).unwrap(), json!({"type": "function", "function": {
///     "name": "lookup", "description": "Look up a person.", "parameters": {"type": "object"}}}));
///
/// let bare: ToolDefinition = serde_json::from_value(json!({"name": "now"})).unwrap();
/// assert_eq!(bare.name, "now");
/// assert!(serde_json::from_value::<ToolDefinition>(json!({"type": "function"})).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What it does (left out of the descriptor when `None`).
    pub description: Option<String>,
    /// The JSON schema of its argument object (left out when `None`: any arguments).
    pub parameters: Option<Value>,
    /// The function object's other keys, sent after the three above.
    pub extra: Map<String, Value>,
}

impl ToolDefinition {
    /// A definition with a name, a description and an argument schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: Some(description.into()),
            parameters: Some(parameters),
            extra: Map::new(),
        }
    }

    /// Reads an OpenAI function descriptor, wrapped (`{"type": "function", "function": {..}}`) or
    /// bare (`{"name", ..}`); the error says what is missing.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::tool::{DescriptorError, ToolDefinition};
    /// let err = ToolDefinition::from_descriptor(&json!({"function": {"parameters": {}}})).unwrap_err();
    /// assert!(matches!(err, DescriptorError::NoName { .. }));
    /// assert_eq!(err.to_string(), "a tool descriptor needs a string `name`, got {\"parameters\":{}}");
    /// ```
    pub fn from_descriptor(descriptor: &Value) -> Result<ToolDefinition, DescriptorError> {
        let function = descriptor.get("function").unwrap_or(descriptor);
        let Some(object) = function.as_object() else {
            return Err(DescriptorError::NotAnObject {
                got: function.to_string(),
            });
        };
        let Some(name) = object.get("name").and_then(Value::as_str) else {
            return Err(DescriptorError::NoName {
                got: function.to_string(),
            });
        };
        let description = match object.get("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => {
                return Err(DescriptorError::DescriptionNotText {
                    tool: name.to_owned(),
                    got: other.to_string(),
                });
            }
        };
        let mut extra = object.clone();
        for key in ["name", "description", "parameters"] {
            extra.shift_remove(key);
        }
        Ok(ToolDefinition {
            name: name.to_owned(),
            description,
            parameters: object.get("parameters").cloned(),
            extra,
        })
    }

    /// The argument schema with `$ref`s inlined, an open object when there is none: what a
    /// schema-constrained call must follow.
    pub(crate) fn resolved_parameters(&self) -> Value {
        self.parameters
            .as_ref()
            .map_or_else(|| json!({"type": "object"}), crate::schema::inline_refs)
    }

    /// The OpenAI descriptor, as sent.
    pub fn to_value(&self) -> Value {
        let mut function = Map::new();
        function.insert("name".to_owned(), Value::String(self.name.clone()));
        if let Some(description) = &self.description {
            function.insert("description".to_owned(), Value::String(description.clone()));
        }
        if let Some(parameters) = &self.parameters {
            function.insert("parameters".to_owned(), parameters.clone());
        }
        function.extend(self.extra.clone());
        json!({"type": "function", "function": function})
    }
}

impl Serialize for ToolDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let descriptor = Value::deserialize(deserializer)?;
        ToolDefinition::from_descriptor(&descriptor).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_descriptor_round_trips_with_its_other_keys() {
        let sent = json!({"type": "function", "function": {
            "name": "f", "description": "F.", "parameters": {"type": "object"}, "strict": true}});
        let definition: ToolDefinition = serde_json::from_value(sent.clone()).unwrap();
        assert_eq!(
            definition.extra,
            json!({"strict": true}).as_object().unwrap().clone()
        );
        assert_eq!(serde_json::to_value(&definition).unwrap(), sent);
    }

    #[test]
    fn a_bare_function_is_sent_wrapped_without_keys_it_lacked() {
        let definition = ToolDefinition::from_descriptor(&json!({"name": "f"})).unwrap();
        assert_eq!(
            definition.to_value(),
            json!({"type": "function", "function": {"name": "f"}})
        );
        assert_eq!(definition.resolved_parameters(), json!({"type": "object"}));
    }

    #[test]
    fn forged_descriptors_are_refused_with_what_is_wrong() {
        for (descriptor, error) in [
            (json!("f"), "a tool descriptor must be an object, got \"f\""),
            (
                json!({"name": 3}),
                "a tool descriptor needs a string `name`, got {\"name\":3}",
            ),
            (
                json!({"name": "f", "description": ["x"]}),
                "tool `f`: `description` must be a string, got [\"x\"]",
            ),
        ] {
            assert_eq!(
                ToolDefinition::from_descriptor(&descriptor)
                    .unwrap_err()
                    .to_string(),
                error
            );
        }
    }
}
