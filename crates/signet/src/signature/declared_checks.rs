//! Checks a signature declares on its output fields (`#[output(check = path)]`,
//! `#[output(grounded)]`): data here; the modules built on the signature run them
//! ([`crate::module::check`]).

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A check of one output field's value: `Ok`, or what is wrong.
pub type FieldCheckFn = Arc<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// A check declared on an output field. Modules built on the signature (`Predict`,
/// `ChainOfThought`, `ReAct`) check every answer with it and re-ask on a failure
/// ([`crate::module::check`]).
///
/// ```
/// use signet::signature::{DeclaredCheck, Field};
/// /// A percentage.
/// fn percent(value: &f64) -> Result<(), String> {
///     (0.0..=100.0).contains(value).then_some(()).ok_or_else(|| format!("{value} is not a percentage"))
/// }
/// let field = Field::of::<f64>("share").with_check(DeclaredCheck::typed("percent", percent));
/// assert_eq!(field.checks().len(), 1);
/// let DeclaredCheck::Fn { check, .. } = &field.checks()[0] else { panic!() };
/// assert_eq!(check(&serde_json::json!(140.0)).unwrap_err(), "140 is not a percentage");
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum DeclaredCheck {
    /// Every figure of the field comes from a tool result or the inputs
    /// ([`Grounded`](crate::module::check::Grounded) on this field).
    Grounded,
    /// A function of the field's value.
    Fn {
        /// The check's name (the function's path, for a derived signature).
        name: String,
        /// The function.
        check: FieldCheckFn,
    },
}

impl DeclaredCheck {
    /// A check named `name` running `check` on the field's value read as `T` (a value that is
    /// not a `T` fails, saying why).
    pub fn typed<T, E>(name: &str, check: fn(&T) -> Result<(), E>) -> DeclaredCheck
    where
        T: DeserializeOwned + 'static,
        E: std::fmt::Display + 'static,
    {
        DeclaredCheck::Fn {
            name: name.to_owned(),
            check: Arc::new(move |value: &Value| {
                let typed = T::deserialize(value)
                    .map_err(|e| format!("the value does not fit its type: {e}"))?;
                check(&typed).map_err(|e| e.to_string())
            }),
        }
    }
}

impl std::fmt::Debug for DeclaredCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeclaredCheck::Grounded => f.write_str("Grounded"),
            DeclaredCheck::Fn { name, .. } => f.debug_struct("Fn").field("name", name).finish(),
        }
    }
}

/// A field's declared checks: not part of the field's data (never saved, never compared).
#[derive(Clone, Default, Debug)]
pub(crate) struct DeclaredChecks(pub(crate) Vec<DeclaredCheck>);

impl PartialEq for DeclaredChecks {
    fn eq(&self, _: &DeclaredChecks) -> bool {
        true
    }
}
