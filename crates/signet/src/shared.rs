//! Turning a value given to a setter into the `Arc<dyn Trait>` handle a module keeps, without
//! wrapping a handle that already is one.

use std::any::Any;

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
