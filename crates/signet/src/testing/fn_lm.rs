//! An LM whose reply is a function of the request: a scripted model for tests and benchmarks
//! whose answers depend on the prompt (its instruction, its demos) rather than on call order.

use futures::future::BoxFuture;

use crate::lm::{Completion, Lm, LmError, LmRequest};

/// An LM answering each request with `reply(request)`, at once and counting one LM call each.
/// Unlike [`ScriptedLm`](super::ScriptedLm) its replies do not depend on the order of the
/// calls, so it serves concurrent evaluations and optimizers that try many prompts.
///
/// ```
/// use signet::testing::FnLm;
/// use signet::prelude::*;
///
/// /// Answer.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: String }
///
/// let lm = FnLm::new(|request| {
///     let shout = request.messages[0].content.contains("Shout.");
///     format!("[[ ## answer ## ]]\n{}", if shout { "HI" } else { "hi" })
/// });
/// let mut program = Predict::<Ask>::new().with_lm(lm);
/// assert_eq!(program.call_blocking(AskInput { question: "?".into() }).unwrap().answer, "hi");
/// program.predictor_mut().set_instructions("Shout.");
/// assert_eq!(program.call_blocking(AskInput { question: "?".into() }).unwrap().answer, "HI");
/// ```
pub struct FnLm<F> {
    reply: F,
}

impl<F: Fn(&LmRequest) -> String + Send + Sync> FnLm<F> {
    /// An LM that answers with `reply`.
    pub fn new(reply: F) -> FnLm<F> {
        FnLm { reply }
    }
}

impl<F: Fn(&LmRequest) -> String + Send + Sync> Lm for FnLm<F> {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        let span = crate::lm::ChatSpan::start("signet.fn", "fn", request, false);
        let mut completion = Completion::text((self.reply)(request));
        completion.usage.lm_calls = 1;
        span.run(async move { Ok(completion) })
    }

    fn model(&self) -> &str {
        "fn"
    }
}
