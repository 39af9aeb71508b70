//! DSPy's `TwoStepAdapter`: the main model answers in its own words, a second model reads the
//! outputs out of that answer.

use std::sync::Arc;

use super::{Adapter, AdapterName, Fields, ParseError, templates};
use crate::lm::{Lm, Message};
use crate::signature::{DynSignature, Field};

/// DSPy's `TwoStepAdapter`: the main model gets a plain task description (what it is given, what
/// its answer must contain, the instructions) and the inputs as `name: value` lines, and answers
/// as it likes — which suits reasoning models that do worse when held to a format. A second,
/// usually smaller, **extraction model** then reads the outputs out of that answer with the
/// [`ChatAdapter`](super::ChatAdapter) (and its JSON fallback), from a `text -> outputs` signature.
///
/// Each call costs two LM calls (three when the extraction falls back to JSON); both are counted
/// in the call's usage. An answer the extraction model cannot read is a
/// [`ParseError::Extraction`] holding the main model's answer and why.
///
/// ```
/// use std::sync::Arc;
/// use signet::adapter::TwoStepAdapter;
/// use signet::module::DynPredict;
/// use signet::testing::ScriptedLm;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let main = Arc::new(ScriptedLm::texts(["Paris, of course: it has been the capital for centuries."]));
/// let extraction = Arc::new(ScriptedLm::texts(["[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"]));
/// let qa = DynPredict::new("question -> answer".parse().unwrap())
///     .with_lm(main.clone())
///     .with_adapter(TwoStepAdapter::new(extraction.clone()));
/// let inputs = [("question".to_owned(), "Capital of France?".into())].into_iter().collect();
/// let prediction = qa.forward(&inputs).await.unwrap();
/// assert_eq!(prediction.outputs["answer"], "Paris");
/// assert_eq!(main.requests()[0].messages[1].content, "question: Capital of France?");
/// assert_eq!(extraction.requests().len(), 1);
/// # });
/// ```
#[derive(Clone)]
pub struct TwoStepAdapter {
    extraction: Arc<dyn Lm>,
}

impl std::fmt::Debug for TwoStepAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwoStepAdapter")
            .field("extraction", &self.extraction.model())
            .finish()
    }
}

impl TwoStepAdapter {
    /// The two-step format, its answers read by `extraction` (DSPy's
    /// `TwoStepAdapter(extraction_model)`).
    pub fn new(extraction: impl Lm + 'static) -> TwoStepAdapter {
        TwoStepAdapter {
            extraction: crate::lm::shared(extraction),
        }
    }

    /// The model that reads the outputs.
    pub fn extraction_lm(&self) -> &Arc<dyn Lm> {
        &self.extraction
    }
}

impl Adapter for TwoStepAdapter {
    fn name(&self) -> AdapterName {
        AdapterName::TwoStep
    }

    fn format(&self, signature: &DynSignature, demos: &[Fields], inputs: &Fields) -> Vec<Message> {
        super::format_messages(&templates::TWO_STEP_FORMAT, signature, demos, inputs, false)
    }

    /// The answer cannot be read without the extraction model, which is asked by the modules
    /// (through [`extraction`](Adapter::extraction)): here, a [`ParseError::Extraction`] saying
    /// so.
    fn parse(&self, _signature: &DynSignature, text: &str) -> Result<Fields, ParseError> {
        Err(ParseError::Extraction {
            adapter: AdapterName::TwoStep,
            response: text.to_owned(),
            reason: "the answer is read by the extraction model, which `parse` does not call; \
                     call the module (or `signet::adapted::run`)"
                .to_owned(),
        })
    }

    fn extraction(&self) -> Option<&Arc<dyn Lm>> {
        Some(&self.extraction)
    }
}

/// The extraction step's signature: `text` in, `signature`'s outputs out.
pub(crate) fn extractor(signature: &DynSignature) -> DynSignature {
    signature.outputs().iter().fold(
        DynSignature::new("StringSignature")
            .with_instructions(templates::two_step_extraction_instructions(
                signature.outputs(),
            ))
            .with_input(Field::str("text")),
        |extractor, output| extractor.with_output(output.clone()),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_extractor_reads_every_output_from_text() {
        let sig = DynSignature::parse("question -> answer, sure: bool").unwrap();
        let extractor = extractor(&sig);
        let names: Vec<&str> = extractor.fields().map(Field::name).collect();
        assert_eq!(names, ["text", "answer", "sure"]);
        assert!(
            extractor
                .instructions()
                .contains("the fields `answer`, `sure`.")
        );
        assert_eq!(
            json!(extractor.outputs()[1].type_name()),
            json!(sig.outputs()[1].type_name())
        );
    }
}
