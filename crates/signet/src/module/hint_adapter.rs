//! The adapter [`Refine`](super::Refine) puts around each predictor of a retried attempt: every
//! call gets one more input, `hint_`, holding the advice the feedback step gave that predictor
//! (DSPy's `WrapperAdapter` inside `dspy.Refine`).

use std::sync::Arc;

use crate::adapter::templates::REFINE_HINT_FIELD;
use crate::adapter::{Adapter, AdapterName, Fields, ParseError};
use crate::lm::{Capabilities, LmRequest, Message};
use crate::signature::{DynSignature, Field};

/// `inner` with the input `hint_` added to every call's signature (last among the inputs) and
/// inputs.
#[derive(Debug)]
pub(super) struct HintAdapter {
    pub(super) inner: Arc<dyn Adapter>,
    pub(super) hint: String,
}

impl HintAdapter {
    fn hinted(&self, signature: &DynSignature, inputs: &Fields) -> (DynSignature, Fields) {
        let (name, desc) = REFINE_HINT_FIELD;
        let signature = signature
            .clone()
            .with_input(Field::str(name).with_desc(desc));
        let mut inputs = inputs.clone();
        inputs.insert(name.to_owned(), self.hint.clone().into());
        (signature, inputs)
    }
}

impl Adapter for HintAdapter {
    fn name(&self) -> AdapterName {
        self.inner.name()
    }

    fn marks_fields(&self) -> bool {
        self.inner.marks_fields()
    }

    fn format(&self, signature: &DynSignature, demos: &[Fields], inputs: &Fields) -> Vec<Message> {
        let (signature, inputs) = self.hinted(signature, inputs);
        self.inner.format(&signature, demos, &inputs)
    }

    fn parse(&self, signature: &DynSignature, text: &str) -> Result<Fields, ParseError> {
        self.inner.parse(signature, text)
    }

    fn configure(
        &self,
        signature: &DynSignature,
        inputs: &Fields,
        request: &mut LmRequest,
        capabilities: Capabilities,
    ) {
        let (signature, inputs) = self.hinted(signature, inputs);
        self.inner
            .configure(&signature, &inputs, request, capabilities);
    }

    fn render_text_fields(&self, values: &Fields) -> String {
        self.inner.render_text_fields(values)
    }

    fn native_function_calling(&self) -> bool {
        self.inner.native_function_calling()
    }

    fn parallel_tool_calls(&self) -> Option<bool> {
        self.inner.parallel_tool_calls()
    }

    fn fallback(&self, signature: &DynSignature, inputs: &Fields) -> Option<Box<dyn Adapter>> {
        let fallback = self.inner.fallback(signature, inputs)?;
        Some(Box::new(HintAdapter {
            inner: Arc::from(fallback),
            hint: self.hint.clone(),
        }))
    }
}
