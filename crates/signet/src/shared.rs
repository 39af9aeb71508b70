//! Builder setters: the [`setters!`] that writes the one-line ones, and turning a value given to
//! a setter into the `Arc<dyn Trait>` handle a module keeps, without wrapping a handle that
//! already is one.

use std::any::Any;

/// Builder setters that store a value in a field of `self`: each
/// `fn name(arg: Type) { path.to.field = value }`, with its doc comment, becomes
/// `pub fn name(mut self, arg: Type) -> Self`. A type's one-line settings then read as a list of
/// what each sets, and the shape of a setter is written once.
macro_rules! setters {
    ($( $(#[$attr:meta])* fn $name:ident($arg:ident: $ty:ty) { $($field:ident).+ = $value:expr } )*) => {
        $(
            $(#[$attr])*
            pub fn $name(mut self, $arg: $ty) -> Self {
                self.$($field).+ = $value;
                self
            }
        )*
    };
}
pub(crate) use setters;

/// Builder methods that configure a builder held in `$field` the same way (a typed module's
/// untyped core, an optimizer's inner one), so each setting is written (and documented) once.
macro_rules! forward_builders {
    ($field:ident; $( $(#[$doc:meta])* fn $name:ident($arg:ident: $ty:ty); )*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $arg: $ty) -> Self {
                self.$field = self.$field.$name($arg);
                self
            }
        )*
    };
}
pub(crate) use forward_builders;

/// `value` itself when it already is the handle `H` (an `Arc<dyn Trait>`), else `wrap(value)`.
pub(crate) fn share<T: 'static, H: 'static>(value: T, wrap: impl FnOnce(T) -> H) -> H {
    let boxed: Box<dyn Any> = Box::new(value);
    match boxed.downcast::<H>() {
        Ok(handle) => *handle,
        Err(other) => match other.downcast::<T>() {
            Ok(value) => wrap(*value),
            Err(_) => unreachable!("a box holds the type it was made from"),
        },
    }
}

/// A panic payload's message.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// A text rendered once and sent in many requests (a predictor's system prompt), with its JSON
/// string (quoted and escaped) written the first time a request body needs it, not per request.
pub(crate) struct SharedText {
    text: Box<str>,
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    json: std::sync::OnceLock<Option<Box<serde_json::value::RawValue>>>,
}

impl SharedText {
    pub(crate) fn new(text: String) -> std::sync::Arc<SharedText> {
        std::sync::Arc::new(SharedText {
            text: text.into_boxed_str(),
            json: std::sync::OnceLock::new(),
        })
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    /// The text as a JSON string, escaped once (read by the OpenAI client; `None` only if serde_json refused it, which a
    /// `str` never is: callers then escape it themselves).
    pub(crate) fn json(&self) -> Option<&serde_json::value::RawValue> {
        let json = self.json.get_or_init(|| {
            let quoted = serde_json::to_string(&*self.text).ok()?;
            serde_json::value::RawValue::from_string(quoted).ok()
        });
        json.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::lm::Lm;
    use crate::testing::ScriptedLm;

    #[test]
    fn a_handle_is_kept_and_a_value_is_wrapped() {
        let handle: Arc<dyn Lm> = Arc::new(ScriptedLm::texts(["x"]));
        let kept = crate::lm::shared(handle.clone());
        assert!(Arc::ptr_eq(&handle, &kept));
        let wrapped = crate::lm::shared(ScriptedLm::texts(["y"]));
        assert_eq!(wrapped.model(), "scripted");
    }
}
