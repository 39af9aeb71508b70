//! Why a value does not fit its field ([`ValueError`]).

use crate::adapter::value::MAX_NESTING;

/// Why a value read for a field does not fit the field's type; its `Display` is the reason a
/// parse error shows (and the model reads when it is asked again).
///
/// ```
/// use signet::adapter::value::{ValueError, coerce};
/// use serde_json::json;
/// let error = coerce(&json!({"b": "x"}), &json!({
///     "type": "object",
///     "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
///     "required": ["a"]
/// }), &json!({})).unwrap_err();
/// assert!(matches!(error, ValueError::MissingField { .. }));
/// assert_eq!(error.to_string(), "field `a` is required");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// The value is nested deeper than Signet reads.
    #[error(
        "the value is nested deeper than {MAX_NESTING} levels, more than Signet reads (a reply \
         this deep is not an answer)"
    )]
    TooDeep,
    /// Not one of the values the field allows (a `Literal` or an enum's values).
    #[error("{value} is not one of [{}]", allowed.join(", "))]
    NotAllowed {
        /// The value, as JSON.
        value: String,
        /// The allowed values, as JSON.
        allowed: Vec<String>,
    },
    /// Not the one value the schema allows (`const`).
    #[error("{value} is not {expected}")]
    NotConstant {
        /// The value, as JSON.
        value: String,
        /// The value required, as JSON.
        expected: String,
    },
    /// Neither a member's name nor its value, for an enum.
    #[error("{value} is not a valid name or value for the enum {enum_name}")]
    NotAMember {
        /// The value as written.
        value: String,
        /// The enum's type name.
        enum_name: String,
    },
    /// Not of the type expected (`"abc" is not a valid integer`).
    #[error("{value} is not a valid {expected}")]
    WrongType {
        /// The value, shortened.
        value: String,
        /// The JSON type expected.
        expected: String,
    },
    /// A number with a fractional part where an integer is expected.
    #[error("{value} has a fractional part, so it is not a valid integer")]
    Fractional {
        /// The number.
        value: String,
    },
    /// NaN or an infinity, which JSON values cannot hold.
    #[error(
        "{value} is not a finite number (Signet's values are JSON, which has no NaN or infinity)"
    )]
    NotFinite {
        /// The text read.
        value: String,
    },
    /// A tuple of the wrong length.
    #[error("expected {expected} items, got {got}")]
    WrongLength {
        /// The length expected.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A required field of an object is missing.
    #[error("field `{name}` is required")]
    MissingField {
        /// The field's name.
        name: String,
    },
    /// The schema refers to a definition it does not hold.
    #[error("unresolvable reference {reference}")]
    UnresolvableReference {
        /// The `$ref`.
        reference: String,
    },
    /// No alternative of a union fits; each one's reason, in order.
    #[error("{}", alternatives.iter().map(ToString::to_string).collect::<Vec<_>>().join("; or "))]
    NoAlternative {
        /// Why each alternative does not fit.
        alternatives: Vec<ValueError>,
    },
    /// A part of the value does not fit: an object's field (`name`), a list's item (`item 2`), a
    /// map's key (`key "a"`).
    #[error("{at}: {error}")]
    At {
        /// Where, as the message names it.
        at: String,
        /// What is wrong there.
        error: Box<ValueError>,
    },
}

impl ValueError {
    /// `self` at `at` (a field, an item, a key) of the value.
    pub(crate) fn at(self, at: impl Into<String>) -> ValueError {
        ValueError::At {
            at: at.into(),
            error: Box::new(self),
        }
    }
}
