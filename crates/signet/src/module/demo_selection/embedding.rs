//! [`EmbeddingDemos`]: the demos nearest a call by embedding similarity, as DSPy's `KNN`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{DemoSelector, NearestDemos};
use crate::adapter::Fields;
use crate::embed::{EmbedError, Embedder, normalized, rank};

/// How many call inputs' vectors are kept between [`prepare`](DemoSelector::prepare) and
/// [`select`](DemoSelector::select) (calls running at the same time each need theirs).
const QUERIES_KEPT: usize = 256;

/// Shows the `k` demos whose inputs are most like the call's by an [`Embedder`]'s vectors (cosine
/// similarity): DSPy's `KNN` / `KNNFewShot(k, trainset, vectorizer=embedder)`.
///
/// The text embedded for a demo and for a call is DSPy's: the compared inputs as `key: value`
/// joined by ` | ` (`question: Weather in Oslo?`), over the inputs named by [`on`](Self::on) (what
/// [`KnnFewShot`](crate::optimize::KnnFewShot) sets: the training examples' input keys), or every
/// input of the call when none are named. A string is written as it is, any other value as JSON.
///
/// * A demo's vector is computed once and kept (by its text):
///   [`embed_demos`](Self::embed_demos) embeds a pool up front (`KnnFewShot::compile` does); a demo
///   added later is embedded by the first call that needs it.
/// * Each call's inputs are embedded when the call starts ([`DemoSelector::prepare`], which every
///   module runs before it formats a prompt); an embedder failure fails the call with
///   [`Error::Embed`](crate::Error::Embed).
/// * Most similar first (ties to the earlier demo); [`most_similar_last`](Self::most_similar_last)
///   reverses that. A zero vector scores 0, as in [`VectorIndex`](crate::embed::VectorIndex).
/// * [`select`](DemoSelector::select) without a `prepare` first (the sync
///   [`DynPredict::demos_for`](super::super::DynPredict::demos_for) on inputs never prepared, or a
///   ReAct step whose compared inputs include the growing trajectory because no keys were named)
///   cannot wait for the embedder: it chooses by word overlap ([`NearestDemos`], same `k`, keys
///   and order) and logs a warning once per selector.
///
/// Saved programs keep `{"nearest": k, "keys": [..], "embedding": "<model>"}` under the
/// predictor's `demo_selection`; the embedder itself cannot be saved, so a loaded program selects
/// by word overlap (with a warning) until it is given an `EmbeddingDemos` again
/// ([`from_state`](Self::from_state) rebuilds one from the saved setting and an embedder).
///
/// ```
/// use serde_json::json;
/// use signet::adapter::Fields;
/// use signet::embed::FnEmbedder;
/// use signet::module::{DemoSelector, EmbeddingDemos};
///
/// // Two dimensions: weather words and money words.
/// let embedder = FnEmbedder::new("topics", |texts: &[String]| {
///     Ok::<_, String>(texts.iter().map(|t| {
///         let t = t.to_lowercase();
///         let count = |words: &[&str]| words.iter().filter(|w| t.contains(*w)).count() as f32;
///         vec![count(&["rain", "weather", "sunny"]), count(&["eur", "nok", "price"])]
///     }).collect())
/// });
/// let demo = |q: &str| -> Fields { [("question".to_owned(), json!(q))].into_iter().collect() };
/// let demos = [demo("Is it sunny in Rome?"), demo("500 EUR in NOK?")];
/// let selector = EmbeddingDemos::new(1, embedder).on(["question"]);
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let call = demo("What is the price in NOK?");
/// selector.prepare(&demos, &call).await.unwrap();
/// assert_eq!(selector.select(&demos, &call), [1]);
/// assert_eq!(selector.state().unwrap(), json!({"nearest": 1, "keys": ["question"], "embedding": "topics"}));
/// # });
/// ```
pub struct EmbeddingDemos {
    k: usize,
    keys: Vec<String>,
    most_similar_last: bool,
    embedder: Arc<dyn Embedder>,
    cache: Mutex<Cache>,
}

/// Unit vectors by text: the demos' (kept), and the last [`QUERIES_KEPT`] calls' inputs.
#[derive(Default)]
struct Cache {
    demos: HashMap<String, Arc<[f32]>>,
    queries: HashMap<String, Arc<[f32]>>,
    query_order: VecDeque<String>,
    warned: bool,
}

impl std::fmt::Debug for EmbeddingDemos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingDemos")
            .field("k", &self.k)
            .field("keys", &self.keys)
            .field("most_similar_last", &self.most_similar_last)
            .field("model", &self.embedder.model())
            .finish_non_exhaustive()
    }
}

impl EmbeddingDemos {
    /// The `k` nearest demos by `embedder`'s vectors, compared on every input of the call.
    pub fn new(k: usize, embedder: impl Embedder + 'static) -> EmbeddingDemos {
        EmbeddingDemos {
            k,
            keys: Vec::new(),
            most_similar_last: false,
            embedder: crate::embed::shared(embedder),
            cache: Mutex::new(Cache::default()),
        }
    }

    /// Compares only these inputs (the training examples' input keys): a ReAct step's growing
    /// trajectory then does not change the text embedded, so its call is embedded once.
    pub fn on<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> EmbeddingDemos {
        self.keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Shows the most similar demo last instead of first.
    pub fn most_similar_last(mut self, last: bool) -> EmbeddingDemos {
        self.most_similar_last = last;
        self
    }

    /// How many demos a call shows.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// A selector with the setting [`state`](DemoSelector::state) saved and `embedder` (which
    /// should be the model the state names); `None` when `state` is not one.
    pub fn from_state(state: &Value, embedder: impl Embedder + 'static) -> Option<EmbeddingDemos> {
        let nearest = NearestDemos::from_state(state)?;
        Some(
            EmbeddingDemos::new(nearest.k(), embedder)
                .on(nearest.keys().to_vec())
                .most_similar_last(state.get("most_similar_last") == Some(&json!(true))),
        )
    }

    /// Embeds the demos whose vectors are not kept yet (in the embedder's batches), and keeps them.
    pub async fn embed_demos(
        &self,
        demos: &[Fields],
        call_keys: &[&str],
    ) -> Result<(), EmbedError> {
        let texts: Vec<String> = {
            let cache = self.lock();
            let mut missing: Vec<String> = demos
                .iter()
                .map(|demo| self.text(demo, call_keys))
                .filter(|text| !cache.demos.contains_key(text))
                .collect();
            missing.sort_unstable();
            missing.dedup();
            missing
        };
        if texts.is_empty() {
            return Ok(());
        }
        let vectors = self.embedder.embed(&texts).await?;
        let vectors = crate::embed::check_vectors(texts.len(), vectors)?;
        let mut cache = self.lock();
        for (text, vector) in texts.into_iter().zip(vectors) {
            cache.demos.insert(text, normalized(vector).into());
        }
        Ok(())
    }

    /// The keys compared for a call with `inputs`.
    fn keys_for<'a>(&'a self, inputs: &'a Fields) -> Vec<&'a str> {
        if self.keys.is_empty() {
            inputs.keys().map(String::as_str).collect()
        } else {
            self.keys.iter().map(String::as_str).collect()
        }
    }

    /// DSPy's text of `fields`: `key: value` of the compared keys it has, joined by ` | `.
    fn text(&self, fields: &Fields, keys: &[&str]) -> String {
        keys.iter()
            .filter_map(|key| {
                let value = fields.get(*key)?;
                Some(match value {
                    Value::String(text) => format!("{key}: {text}"),
                    other => format!("{key}: {other}"),
                })
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn word_overlap(&self) -> NearestDemos {
        NearestDemos::new(self.k)
            .on(self.keys.clone())
            .most_similar_last(self.most_similar_last)
    }
}

impl DemoSelector for EmbeddingDemos {
    fn select(&self, demos: &[Fields], inputs: &Fields) -> Vec<usize> {
        let keys = self.keys_for(inputs);
        let query = self.text(inputs, &keys);
        let found = {
            let mut cache = self.lock();
            let vectors: Option<Vec<Arc<[f32]>>> = demos
                .iter()
                .map(|demo| cache.demos.get(&self.text(demo, &keys)).cloned())
                .collect();
            match (cache.queries.get(&query).cloned(), vectors) {
                (Some(query), Some(vectors)) => Some((query, vectors)),
                _ => {
                    if !std::mem::replace(&mut cache.warned, true) {
                        tracing::warn!(
                            model = self.embedder.model(),
                            "demos selected by word overlap: the call's inputs or its demos were \
                             not embedded first (DemoSelector::prepare); name the compared inputs \
                             with `on` for ReAct steps"
                        );
                    }
                    None
                }
            }
        };
        let Some((query, vectors)) = found else {
            return self.word_overlap().select(demos, inputs);
        };
        let mut chosen: Vec<usize> = rank(&query, vectors.iter().map(|v| &v[..]), self.k)
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        if self.most_similar_last {
            chosen.reverse();
        }
        chosen
    }

    fn prepare<'a>(
        &'a self,
        demos: &'a [Fields],
        inputs: &'a Fields,
    ) -> BoxFuture<'a, Result<(), EmbedError>> {
        async move {
            let keys = self.keys_for(inputs);
            self.embed_demos(demos, &keys).await?;
            let query = self.text(inputs, &keys);
            if self.lock().queries.contains_key(&query) {
                return Ok(());
            }
            let texts = [query];
            let vector = crate::embed::check_vectors(1, self.embedder.embed(&texts).await?)?
                .pop()
                .unwrap_or_default();
            let [query] = texts;
            let mut cache = self.lock();
            if cache.query_order.len() >= QUERIES_KEPT
                && let Some(oldest) = cache.query_order.pop_front()
            {
                cache.queries.remove(&oldest);
            }
            cache.query_order.push_back(query.clone());
            cache.queries.insert(query, normalized(vector).into());
            Ok(())
        }
        .boxed()
    }

    fn state(&self) -> Option<Value> {
        let mut state = json!({"nearest": self.k, "keys": self.keys});
        if self.most_similar_last {
            state["most_similar_last"] = json!(true);
        }
        state["embedding"] = json!(self.embedder.model());
        Some(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::FnEmbedder;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn question(q: &str) -> Fields {
        [("question".to_owned(), json!(q))].into_iter().collect()
    }

    /// Counts "a" and "b", and how many texts it embedded.
    fn ab(calls: Arc<AtomicUsize>) -> FnEmbedder {
        FnEmbedder::new("ab", move |texts: &[String]| {
            calls.fetch_add(texts.len(), Ordering::SeqCst);
            Ok::<_, String>(
                texts
                    .iter()
                    .map(|t| vec![t.matches('a').count() as f32, t.matches('b').count() as f32])
                    .collect(),
            )
        })
    }

    #[tokio::test]
    async fn demos_are_embedded_once_and_the_nearest_come_first() {
        let embedded = Arc::new(AtomicUsize::new(0));
        let selector = EmbeddingDemos::new(2, ab(embedded.clone())).on(["question"]);
        let demos = [
            question("bbb"),
            question("aaa"),
            question("ab"),
            question("aab"),
        ];
        selector.prepare(&demos, &question("a")).await.unwrap();
        assert_eq!(selector.select(&demos, &question("a")), [1, 3]);
        assert_eq!(embedded.load(Ordering::SeqCst), 5);
        selector.prepare(&demos, &question("a")).await.unwrap();
        selector.prepare(&demos, &question("b")).await.unwrap();
        assert_eq!(selector.select(&demos, &question("b")), [0, 2]);
        // The demos were embedded once; each new call's inputs once.
        assert_eq!(embedded.load(Ordering::SeqCst), 6);
        let last = EmbeddingDemos::new(2, ab(embedded.clone()))
            .on(["question"])
            .most_similar_last(true);
        last.prepare(&demos, &question("a")).await.unwrap();
        assert_eq!(last.select(&demos, &question("a")), [3, 1]);
    }

    #[tokio::test]
    async fn the_text_is_dspys_key_value_lines_joined_by_bars() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let log = seen.clone();
        let embedder = FnEmbedder::new("log", move |texts: &[String]| {
            log.lock().unwrap().extend(texts.iter().cloned());
            Ok::<_, String>(vec![vec![1.0]; texts.len()])
        });
        let selector = EmbeddingDemos::new(1, embedder);
        let call: Fields = [
            ("question".to_owned(), json!("q?")),
            ("n".to_owned(), json!(3)),
        ]
        .into_iter()
        .collect();
        selector.prepare(&[], &call).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), ["question: q? | n: 3"]);
    }

    #[tokio::test]
    async fn unprepared_calls_fall_back_to_word_overlap_and_failures_are_typed() {
        let selector = EmbeddingDemos::new(1, ab(Arc::default())).on(["question"]);
        let demos = [question("weather in oslo"), question("convert euros")];
        assert_eq!(selector.select(&demos, &question("euros please")), [1]);
        let broken = EmbeddingDemos::new(
            1,
            FnEmbedder::new("down", |_: &[String]| Err::<Vec<Vec<f32>>, _>("offline")),
        );
        assert_eq!(
            broken.prepare(&demos, &question("x")).await.unwrap_err(),
            EmbedError::Function {
                message: "offline".into()
            }
        );
        let restored =
            EmbeddingDemos::from_state(&selector.state().unwrap(), ab(Arc::default())).unwrap();
        assert_eq!(restored.state(), selector.state());
    }
}
