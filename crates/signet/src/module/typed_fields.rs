//! What the typed modules share: their values as fields and back (the input struct as the field
//! map a predictor takes, the predictor's outputs as the output struct, each failure a typed
//! [`Error`]), and their `Clone` and `Debug`.

use serde::Serialize;
use serde_json::Value;

use crate::adapter::Fields;
use crate::error::Error;

/// `value` (a typed input or output) as fields; [`Error::InputType`] when it is not a struct.
pub(crate) fn to_fields<T: Serialize>(value: &T) -> Result<Fields, Error> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(Error::InputType {
            source: <serde_json::Error as serde::ser::Error>::custom(format!(
                "expected a struct with the input fields, got {other}"
            ))
            .into(),
        }),
        Err(e) => Err(Error::InputType { source: e.into() }),
    }
}

/// The outputs as `T`; [`Error::OutputType`] when they do not fit it.
pub(crate) fn from_fields<T: serde::de::DeserializeOwned>(outputs: &Fields) -> Result<T, Error> {
    // Read in place: no copy of the map first (a string field is copied once, into `T`).
    T::deserialize(outputs).map_err(|e| Error::OutputType { source: e.into() })
}

/// `Clone` and `Debug` for a typed module whatever its signature type (derives would require
/// them of the signature struct).
macro_rules! typed_module_impls {
    ($module:ident, $field:ident) => {
        impl<S: $crate::Signature> Clone for $module<S> {
            fn clone(&self) -> Self {
                $module {
                    $field: self.$field.clone(),
                    _signature: std::marker::PhantomData,
                }
            }
        }

        impl<S: $crate::Signature> std::fmt::Debug for $module<S> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_tuple(stringify!($module))
                    .field(&self.$field)
                    .finish()
            }
        }
    };
}
pub(crate) use typed_module_impls;
