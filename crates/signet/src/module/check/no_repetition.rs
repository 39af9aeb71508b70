//! The repetition guard: an answer that loops is refused, and a streaming one is stopped as soon
//! as the loop is written instead of at the token limit.

use super::repetition::{LoopDetector, LoopRule, find_loop};
use super::{Answer, Check, CheckFailure, Watcher, value_text};

/// Refuses an answer in which a phrase repeats over and over ("120 EUR is 120 EUR is 120 EUR
/// is .."): a small model in a loop writes until the token limit, slowly, and what it wrote is
/// not an answer. The rule ([`LoopRule`], default: a phrase of up to 12 words three times in a
/// row, 9 words at least; numbers count as one word, so "100 EUR is 150 EUR is 200 EUR is" loops
/// too) is in [`repetition`](super::repetition). While the answer streams, the reply is stopped
/// at the loop's third repeat; the re-ask shows the model the phrase.
///
/// ```
/// use serde_json::json;
/// use signet::module::check::{Answer, Check, NoRepetition};
///
/// let looping = [("answer".to_owned(), json!("6.40 EUR is 6.40 EUR is 6.40 EUR is 6.40 EUR is"))]
///     .into_iter().collect();
/// let inputs = Default::default();
/// let failure = NoRepetition::new().check(&Answer::new(&looping, &inputs)).unwrap_err();
/// assert!(failure.message.contains("repeats"), "{failure}");
/// ```
#[derive(Debug, Clone, Default)]
pub struct NoRepetition {
    rule: LoopRule,
}

/// The check's name.
const NAME: &str = "no repetition";

impl NoRepetition {
    /// The default [`LoopRule`].
    pub fn new() -> NoRepetition {
        NoRepetition::default()
    }

    /// Loops by `rule`.
    pub fn with_rule(rule: LoopRule) -> NoRepetition {
        NoRepetition { rule }
    }

    fn failure(field: &str, phrase: &str) -> CheckFailure {
        CheckFailure::new(
            NAME,
            format!(
                "The answer repeats \"{phrase}\" over and over. Give the answer once, in one or \
                 two sentences."
            ),
        )
        .on_field(field)
    }
}

impl Check for NoRepetition {
    fn name(&self) -> &str {
        NAME
    }

    fn check(&self, answer: &Answer<'_>) -> Result<(), CheckFailure> {
        for (name, value) in answer.outputs {
            if let Some(found) = find_loop(&value_text(value), self.rule) {
                return Err(NoRepetition::failure(name, &found.phrase));
            }
        }
        Ok(())
    }

    fn watcher(&self) -> Option<Box<dyn Watcher>> {
        Some(Box::new(LoopWatcher {
            rule: self.rule,
            fields: Vec::new(),
        }))
    }
}

/// One detector per streaming field.
struct LoopWatcher {
    rule: LoopRule,
    fields: Vec<(String, LoopDetector)>,
}

impl Watcher for LoopWatcher {
    fn push(
        &mut self,
        field: &str,
        text: &str,
        new_from: usize,
        _answer: &Answer<'_>,
    ) -> Option<CheckFailure> {
        let detector = match self.fields.iter_mut().position(|(f, _)| f == field) {
            Some(at) => &mut self.fields[at].1,
            None => {
                self.fields
                    .push((field.to_owned(), LoopDetector::new(self.rule)));
                &mut self.fields.last_mut()?.1
            }
        };
        let delta = text.get(new_from..)?;
        detector
            .push(delta)
            .map(|found| NoRepetition::failure(field, &found.phrase))
    }
}
