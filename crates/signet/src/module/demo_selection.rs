//! Which of a predictor's demos one call shows: all of them (the default), or the few nearest to
//! the call's inputs — by word overlap ([`NearestDemos`]) or by an embedder's vectors
//! ([`EmbeddingDemos`], what DSPy's `KNNFewShot` does) — so a large pool of demos costs a short
//! prompt, and a small model sees the examples most like its question.

mod embedding;

use std::collections::BTreeMap;
use std::fmt::Debug;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::adapter::Fields;
use crate::embed::EmbedError;
pub use embedding::EmbeddingDemos;

/// Picks the demos a predictor shows for one call
/// ([`DynPredict::with_demo_selector`](super::DynPredict::with_demo_selector)).
///
/// ```
/// use signet::adapter::Fields;
/// use signet::module::DemoSelector;
///
/// /// Shows the last two demos, whatever the inputs.
/// #[derive(Debug)]
/// struct LastTwo;
///
/// impl DemoSelector for LastTwo {
///     fn select(&self, demos: &[Fields], _inputs: &Fields) -> Vec<usize> {
///         (demos.len().saturating_sub(2)..demos.len()).collect()
///     }
/// }
/// assert_eq!(LastTwo.select(&vec![Fields::new(); 5], &Fields::new()), [3, 4]);
/// ```
pub trait DemoSelector: Send + Sync + Debug {
    /// The demos to show for a call with `inputs`: indices into `demos`, in the order shown.
    fn select(&self, demos: &[Fields], inputs: &Fields) -> Vec<usize>;

    /// Does the waiting [`select`](Self::select) needs before a call with `inputs` — embedding
    /// the inputs and the demos not embedded yet ([`EmbeddingDemos`]) — so that `select`, which
    /// cannot wait, finds what it needs. Every module awaits it once per call, before it formats
    /// a prompt; an error fails the call ([`Error::Embed`](crate::Error::Embed)). The provided
    /// method does nothing.
    fn prepare<'a>(
        &'a self,
        demos: &'a [Fields],
        inputs: &'a Fields,
    ) -> BoxFuture<'a, Result<(), EmbedError>> {
        let _ = (demos, inputs);
        Box::pin(std::future::ready(Ok(())))
    }

    /// The selector's setting as a saved program keeps it (under the predictor's
    /// `demo_selection`), or `None` when it cannot be saved (a program loaded later then shows
    /// every demo until a selector is set again).
    fn state(&self) -> Option<Value> {
        None
    }
}

/// Shows the `k` demos whose inputs are most like the call's: TF-IDF-weighted word overlap
/// (cosine similarity) over the input values named by [`on`](Self::on), or over every input of
/// the call when no keys are named; words are lowercased and every number counts as the same
/// word. Ties go to the earlier demo. No model and no network: the
/// words decide, which suits demos that differ by kind of question (a forecast, a conversion,
/// something else) more than by meaning.
///
/// The most similar demo comes first, as DSPy orders them;
/// [`most_similar_last`](Self::most_similar_last) puts it last, next to the question (small
/// models copy what they saw last).
///
/// ```
/// use serde_json::json;
/// use signet::adapter::Fields;
/// use signet::module::{DemoSelector, NearestDemos};
///
/// let demo = |q: &str| -> Fields { [("question".to_owned(), json!(q))].into_iter().collect() };
/// let demos = [demo("How much is 500 EUR in NOK?"), demo("Weather in Oslo tomorrow?"), demo("Who wrote Peer Gynt?")];
/// let nearest = NearestDemos::new(1).on(["question"]);
/// assert_eq!(nearest.select(&demos, &demo("Weather in Bergen tomorrow?")), [1]);
/// assert_eq!(nearest.select(&demos, &demo("How much is 80 EUR in NOK?")), [0]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearestDemos {
    k: usize,
    keys: Vec<String>,
    most_similar_last: bool,
    /// Compare words by their character n-grams of this length (`None`: whole words).
    char_ngrams: Option<usize>,
}

impl NearestDemos {
    /// The `k` nearest demos, compared on every input of the call.
    pub fn new(k: usize) -> NearestDemos {
        NearestDemos {
            k,
            keys: Vec::new(),
            most_similar_last: false,
            char_ngrams: None,
        }
    }

    /// Compares words by their character n-grams of length `n` (3 is a good choice) instead of
    /// whole words, and every number by its shape (`#` for `500`, `#.#` for `12.5`, `#,#` for
    /// `1,500`, `#,#.#` for `2,750.50`): a misspelt word ("forcast", "tommorow") is still near
    /// its demo, and a question with a thousands separator is nearest the demos that have one.
    /// `n` below 2 is 2.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::adapter::Fields;
    /// use signet::module::{DemoSelector, NearestDemos};
    ///
    /// let q = |t: &str| -> Fields { [("question".to_owned(), json!(t))].into_iter().collect() };
    /// let demos = [q("What is tomorrow's forecast for Oslo?"), q("Convert 1,500 EUR to NOK."), q("Convert 12.5 EUR to NOK.")];
    /// let fuzzy = NearestDemos::new(1).with_char_ngrams(3);
    /// assert_eq!(fuzzy.select(&demos, &q("forcast oslo tommorow")), [0]);
    /// assert_eq!(fuzzy.select(&demos, &q("2,400 eur -> nok")), [1]);
    /// assert_eq!(fuzzy.select(&demos, &q("0.75 eur -> nok")), [2]);
    /// ```
    pub fn with_char_ngrams(mut self, n: usize) -> NearestDemos {
        self.char_ngrams = Some(n.max(2));
        self
    }

    /// The character n-gram length words are compared by, if not whole words.
    pub fn char_ngrams(&self) -> Option<usize> {
        self.char_ngrams
    }

    /// Compares only these inputs (the training examples' input keys, say): in a ReAct step the
    /// growing trajectory then does not change which demos a run sees.
    pub fn on<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> NearestDemos {
        self.keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Shows the most similar demo last instead of first.
    pub fn most_similar_last(mut self, last: bool) -> NearestDemos {
        self.most_similar_last = last;
        self
    }

    /// How many demos a call shows.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The inputs compared (empty: all of the call's).
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// Reads the setting [`state`](DemoSelector::state) wrote: `{"nearest": k, "keys": [..],
    /// "most_similar_last": bool}`; `None` when `state` is not one.
    pub fn from_state(state: &Value) -> Option<NearestDemos> {
        let k = usize::try_from(state.get("nearest")?.as_u64()?).ok()?;
        let keys = match state.get("keys") {
            None => Vec::new(),
            Some(keys) => keys
                .as_array()?
                .iter()
                .map(|k| k.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()?,
        };
        let last = match state.get("most_similar_last") {
            None => false,
            Some(last) => last.as_bool()?,
        };
        let mut selector = NearestDemos::new(k).on(keys).most_similar_last(last);
        if let Some(n) = state.get("char_ngrams") {
            selector = selector.with_char_ngrams(usize::try_from(n.as_u64()?).ok()?);
        }
        Some(selector)
    }

    /// The words of the compared inputs of `fields`.
    fn words(&self, fields: &Fields, keys: &[&str]) -> Vec<String> {
        let mut words = Vec::new();
        for key in keys {
            let text = match fields.get(*key) {
                Some(Value::String(text)) => text.to_lowercase(),
                Some(Value::Null) | None => continue,
                Some(other) => other.to_string().to_lowercase(),
            };
            if let Some(n) = self.char_ngrams {
                words.extend(char_ngram_terms(&text, n));
                continue;
            }
            // Numbers are one word: "250 EUR" is like "500 EUR", whatever the amounts.
            words.extend(
                text.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(|w| {
                        if w.chars().all(|c| c.is_ascii_digit()) {
                            "#".to_owned()
                        } else {
                            w.to_owned()
                        }
                    }),
            );
        }
        words
    }
}

impl DemoSelector for NearestDemos {
    fn select(&self, demos: &[Fields], inputs: &Fields) -> Vec<usize> {
        let keys: Vec<&str> = if self.keys.is_empty() {
            inputs.keys().map(String::as_str).collect()
        } else {
            self.keys.iter().map(String::as_str).collect()
        };
        let documents: Vec<Vec<String>> = demos.iter().map(|d| self.words(d, &keys)).collect();
        // Inverse document frequency over the demos (smoothed, as scikit-learn's).
        let mut frequency: BTreeMap<&str, usize> = BTreeMap::new();
        for document in &documents {
            let mut seen: Vec<&str> = document.iter().map(String::as_str).collect();
            seen.sort_unstable();
            seen.dedup();
            for word in seen {
                *frequency.entry(word).or_default() += 1;
            }
        }
        let n = documents.len() as f64;
        let idf = |word: &str| {
            let df = frequency.get(word).copied().unwrap_or(0) as f64;
            ((n + 1.0) / (df + 1.0)).ln() + 1.0
        };
        let vector = |words: &[String]| -> BTreeMap<String, f64> {
            let mut counts: BTreeMap<String, f64> = BTreeMap::new();
            for word in words {
                *counts.entry(word.clone()).or_default() += 1.0;
            }
            for (word, weight) in counts.iter_mut() {
                *weight *= idf(word);
            }
            counts
        };
        let norm = |v: &BTreeMap<String, f64>| v.values().map(|w| w * w).sum::<f64>().sqrt();
        let query = vector(&self.words(inputs, &keys));
        let query_norm = norm(&query);
        let mut scored: Vec<(usize, f64)> = documents
            .iter()
            .enumerate()
            .map(|(i, words)| {
                let demo = vector(words);
                let dot: f64 = query
                    .iter()
                    .filter_map(|(word, w)| demo.get(word).map(|d| w * d))
                    .sum();
                let denominator = query_norm * norm(&demo);
                let similarity = if denominator > 0.0 {
                    dot / denominator
                } else {
                    0.0
                };
                // Rounded so two demos as near as each other (say, one city
                // swapped for another) tie exactly despite rounding noise.
                let similarity = (similarity * 1e9).round() / 1e9;
                (i, similarity)
            })
            .collect();
        // Most similar first; the earlier demo wins a tie. Sums run in word
        // order (BTreeMap), so every run scores the same, never by hashing.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut chosen: Vec<usize> = scored.into_iter().take(self.k).map(|(i, _)| i).collect();
        if self.most_similar_last {
            chosen.reverse();
        }
        chosen
    }

    fn state(&self) -> Option<Value> {
        let mut state = json!({"nearest": self.k, "keys": self.keys});
        if self.most_similar_last {
            state["most_similar_last"] = json!(true);
        }
        if let Some(n) = self.char_ngrams {
            state["char_ngrams"] = json!(n);
        }
        Some(state)
    }
}

/// The terms of `text` (lower case) for [`NearestDemos::with_char_ngrams`]: each word's character
/// n-grams, the word marked at both ends (`^fo`, `for`, .., `st$`), and each number's shape.
fn char_ngram_terms(text: &str, n: usize) -> Vec<String> {
    let mut terms = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            // A number with its separators: its shape.
            let mut shape = String::from("#");
            let mut j = i + 1;
            while j < chars.len() {
                let d = chars[j];
                let separator_then_digit =
                    matches!(d, '.' | ',') && chars.get(j + 1).is_some_and(char::is_ascii_digit);
                if d.is_ascii_digit() {
                    j += 1;
                } else if separator_then_digit {
                    shape.push(d);
                    shape.push('#');
                    j += 2;
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        j += 1;
                    }
                } else {
                    break;
                }
            }
            terms.push(shape);
            i = j;
        } else if c.is_alphanumeric() {
            let start = i;
            while i < chars.len() && chars[i].is_alphanumeric() && !chars[i].is_ascii_digit() {
                i += 1;
            }
            let mut marked = vec!['^'];
            marked.extend(&chars[start..i]);
            marked.push('$');
            if marked.len() <= n {
                terms.push(marked.iter().collect());
            } else {
                terms.extend(marked.windows(n).map(|w| w.iter().collect::<String>()));
            }
        } else {
            i += 1;
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Fields {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect()
    }

    fn questions(texts: &[&str]) -> Vec<Fields> {
        texts.iter().map(|q| fields(&[("question", q)])).collect()
    }

    #[test]
    fn demos_that_differ_only_by_a_rare_word_tie_and_the_earlier_wins_every_time() {
        // One city swapped for another: the same distance from the question,
        // whatever order the words are summed in.
        let demos = questions(&[
            "How much is 500 EUR in NOK?",
            "Weather in Oslo tomorrow?",
            "Who wrote Peer Gynt?",
            "Weather in Bergen tomorrow?",
            "Weather in Zermatt tomorrow?",
        ]);
        let question = fields(&[("question", "Weather in Tromsø tomorrow?")]);
        for _ in 0..500 {
            assert_eq!(NearestDemos::new(3).select(&demos, &question), [1, 3, 4]);
        }
    }

    #[test]
    fn the_nearest_demos_come_first_and_ties_keep_their_order() {
        let demos = questions(&[
            "What is the weather in Paris tomorrow?",
            "How much is 500 EUR in NOK?",
            "What will the weather be in Trondheim tomorrow?",
            "Who wrote Peer Gynt?",
        ]);
        let selector = NearestDemos::new(2);
        let picked = selector.select(
            &demos,
            &fields(&[("question", "What is the weather in Oslo tomorrow?")]),
        );
        assert_eq!(picked, [0, 2]);
        let last = selector.clone().most_similar_last(true);
        let picked = last.select(
            &demos,
            &fields(&[("question", "What is the weather in Oslo tomorrow?")]),
        );
        assert_eq!(picked, [2, 0]);
        // Nothing in common: the first demos, in order.
        assert_eq!(
            selector.select(&demos, &fields(&[("question", "xyz")])),
            [0, 1]
        );
    }

    #[test]
    fn only_the_named_inputs_are_compared() {
        let demos = vec![
            fields(&[
                ("question", "weather in oslo"),
                ("trajectory", "convert euros"),
            ]),
            fields(&[
                ("question", "convert euros"),
                ("trajectory", "weather in oslo"),
            ]),
        ];
        let call = fields(&[
            ("question", "weather in bergen"),
            ("trajectory", "convert euros now"),
        ]);
        assert_eq!(
            NearestDemos::new(1).on(["question"]).select(&demos, &call),
            [0]
        );
        assert_eq!(
            NearestDemos::new(1)
                .on(["trajectory"])
                .select(&demos, &call),
            [0]
        );
        assert_eq!(
            NearestDemos::new(1)
                .on(["question", "trajectory"])
                .select(&demos, &call)
                .len(),
            1
        );
    }

    #[test]
    fn numbers_are_alike_whatever_their_value() {
        let demos = questions(&[
            "How much is 500 EUR in NOK?",
            "What is the weather in Oslo?",
        ]);
        let call = fields(&[("question", "How much is 12.5?")]);
        assert_eq!(NearestDemos::new(1).select(&demos, &call), [0]);
    }

    #[test]
    fn character_ngrams_forgive_typos_and_numbers_keep_their_shape() {
        assert_eq!(
            char_ngram_terms("tmrw 1,500.25 €", 3),
            ["^tm", "tmr", "mrw", "rw$", "#,#.#"]
        );
        let demos = questions(&[
            "What will the weather be in Bergen tomorrow?",
            "How much is 500 EUR in NOK?",
            "Who wrote Peer Gynt?",
        ]);
        let fuzzy = NearestDemos::new(1).with_char_ngrams(3);
        let call = fields(&[("question", "wether bergn tommorow")]);
        assert_eq!(fuzzy.select(&demos, &call), [0]);
        assert_eq!(
            NearestDemos::new(1).select(&demos, &call),
            [0],
            "ties: the first"
        );
        let state = fuzzy.state().unwrap();
        assert_eq!(state["char_ngrams"], 3);
        assert_eq!(NearestDemos::from_state(&state), Some(fuzzy));
    }

    #[test]
    fn more_demos_than_there_are_shows_them_all_and_none_shows_none() {
        let demos = questions(&["a", "b"]);
        assert_eq!(
            NearestDemos::new(5).select(&demos, &fields(&[("question", "b")])),
            [1, 0]
        );
        assert!(
            NearestDemos::new(0)
                .select(&demos, &fields(&[("question", "b")]))
                .is_empty()
        );
        assert!(
            NearestDemos::new(3)
                .select(&[], &fields(&[("question", "b")]))
                .is_empty()
        );
    }

    #[test]
    fn the_setting_survives_its_state() {
        let selector = NearestDemos::new(3)
            .on(["question"])
            .most_similar_last(true);
        let state = selector.state().unwrap();
        assert_eq!(
            state,
            json!({"nearest": 3, "keys": ["question"], "most_similar_last": true})
        );
        assert_eq!(NearestDemos::from_state(&state), Some(selector));
        assert_eq!(NearestDemos::from_state(&json!({"nearest": "three"})), None);
        assert_eq!(
            NearestDemos::from_state(&json!({"nearest": 2})),
            Some(NearestDemos::new(2))
        );
    }
}
