//! DSPy's `KNNFewShot`: every training example becomes a demo, and each call shows only the `k`
//! nearest to its inputs.

use std::sync::Arc;

use super::{Compiled, OptimizeError, Optimizer, reset_copy};
use crate::data::Example;
use crate::embed::Embedder;
use crate::module::{DemoSelector, EmbeddingDemos, NearestDemos, Predictors};

/// Compiles a program whose predictors hold every training example as a demo and show each call
/// the `k` whose inputs are nearest the call's ([`NearestDemos`]: word overlap on the examples'
/// input keys, no model needed). No LM call at compile time.
///
/// DSPy's `KNNFewShot` runs `BootstrapFewShot` on the `k` neighbours at every call, paying for
/// teacher runs at inference time; here the pool is fixed when compiling, so a call costs what an
/// uncompiled one does. To pool bootstrapped demos instead of labeled ones, compile with
/// [`BootstrapFewShot`](super::BootstrapFewShot) first and give its predictors a
/// [`NearestDemos`] selector ([`DynPredict::set_demo_selector`](crate::module::DynPredict::set_demo_selector)).
///
/// ```
/// use serde_json::json;
/// use signet::data::Example;
/// use signet::module::DynPredict;
/// use signet::optimize::KnnFewShot;
///
/// let qa = DynPredict::new("question -> answer".parse().unwrap());
/// let train: Vec<Example> = [("Capital of France?", "Paris"), ("2 + 2?", "4"), ("Capital of Peru?", "Lima")]
///     .iter()
///     .map(|(q, a)| Example::new(json!({"question": q, "answer": a})).with_inputs(["question"]))
///     .collect();
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let compiled = KnnFewShot::new(2).compile(&qa, &train).await.unwrap();
/// assert_eq!(compiled.report.pool, 3);
/// let inputs = [("question".to_owned(), json!("Capital of Spain?"))].into_iter().collect();
/// let shown: Vec<_> = compiled.program.demos_for(&inputs).iter().map(|d| d["answer"].clone()).collect();
/// assert_eq!(shown, [json!("Paris"), json!("Lima")]);
/// # });
/// ```
///
/// With an [`Embedder`] ([`with_embedder`](Self::with_embedder)), the nearest are chosen by its
/// vectors, as DSPy's `KNNFewShot(k, trainset, vectorizer)` does ([`EmbeddingDemos`]).
#[derive(Clone)]
pub struct KnnFewShot {
    k: usize,
    most_similar_last: bool,
    char_ngrams: Option<usize>,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for KnnFewShot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnnFewShot")
            .field("k", &self.k)
            .field("most_similar_last", &self.most_similar_last)
            .field("char_ngrams", &self.char_ngrams)
            .field(
                "embedder",
                &self.embedder.as_ref().map(|e| e.model().to_owned()),
            )
            .finish()
    }
}

/// What [`KnnFewShot`] did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KnnReport {
    /// Demos each predictor holds (the training examples).
    pub pool: usize,
    /// Demos a call shows.
    pub k: usize,
    /// The inputs compared (the training examples' input keys).
    pub keys: Vec<String>,
    /// The predictors given the pool, by path.
    pub predictors: Vec<String>,
    /// The embedder's model, when the nearest are chosen by embeddings.
    pub embedding: Option<String>,
}

impl std::fmt::Display for KnnReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = if self.keys.is_empty() {
            "every input".to_owned()
        } else {
            self.keys.join(", ")
        };
        write!(
            f,
            "{} demos in {}; each call shows the {} nearest on {on}",
            self.pool,
            self.predictors.join(", "),
            self.k
        )?;
        match &self.embedding {
            Some(model) => write!(f, " (by {model} embeddings)"),
            None => Ok(()),
        }
    }
}

impl KnnFewShot {
    /// Each call shows the `k` nearest training examples (DSPy's `KNNFewShot(k, trainset)`).
    pub fn new(k: usize) -> KnnFewShot {
        KnnFewShot {
            k,
            most_similar_last: false,
            char_ngrams: None,
            embedder: None,
        }
    }

    /// Chooses the nearest examples by `embedder`'s vectors (cosine similarity of DSPy's
    /// `key: value | ..` text of the input keys) instead of word overlap: each predictor gets an
    /// [`EmbeddingDemos`] selector. [`compile`](Self::compile) embeds the training examples once
    /// (an embedder failure is [`OptimizeError::Embed`]); each call then embeds its inputs.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::data::Example;
    /// use signet::embed::FnEmbedder;
    /// use signet::module::DynPredict;
    /// use signet::optimize::KnnFewShot;
    ///
    /// // One dimension per topic word.
    /// let topics = FnEmbedder::new("topics", |texts: &[String]| {
    ///     Ok::<_, String>(texts.iter().map(|t| ["capital", "plus"].iter().map(|w| t.matches(w).count() as f32).collect()).collect())
    /// });
    /// let qa = DynPredict::new("question -> answer".parse().unwrap());
    /// let train: Vec<Example> = [("capital of France?", "Paris"), ("2 plus 2?", "4")]
    ///     .iter()
    ///     .map(|(q, a)| Example::new(json!({"question": q, "answer": a})).with_inputs(["question"]))
    ///     .collect();
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let compiled = KnnFewShot::new(1).with_embedder(topics).compile(&qa, &train).await.unwrap();
    /// let saved = compiled.program.state();
    /// assert_eq!(saved["demo_selection"]["embedding"], "topics");
    /// # });
    /// ```
    pub fn with_embedder(mut self, embedder: impl Embedder + 'static) -> KnnFewShot {
        self.embedder = Some(crate::embed::shared(embedder));
        self
    }

    /// Shows the nearest example last, next to the question, instead of first (see
    /// [`NearestDemos::most_similar_last`]).
    pub fn most_similar_last(mut self, last: bool) -> KnnFewShot {
        self.most_similar_last = last;
        self
    }

    /// Without an embedder: compares words by their character n-grams of length `n` and numbers
    /// by their shape (see [`NearestDemos::with_char_ngrams`]), so a misspelt question is still
    /// near its examples.
    pub fn with_char_ngrams(mut self, n: usize) -> KnnFewShot {
        self.char_ngrams = Some(n);
        self
    }

    /// A copy of `student` whose predictors hold every example of `trainset` as a demo (their
    /// earlier demos dropped) and show each call the `k` nearest. Without an embedder it never
    /// fails and never waits (the shape of every optimizer's `compile`;
    /// [`compile_blocking`](Self::compile_blocking) needs no runtime); with one, it embeds the
    /// examples once, here.
    pub async fn compile<P: Predictors + Clone>(
        &self,
        student: &P,
        trainset: &[Example],
    ) -> Result<Compiled<P, KnnReport>, OptimizeError> {
        let run = async {
            let (compiled, embedding) = self.build(student, trainset);
            if let Some(selector) = embedding {
                let demos: Vec<_> = trainset.iter().map(|e| e.values().clone()).collect();
                let keys: Vec<&str> = compiled.report.keys.iter().map(String::as_str).collect();
                selector.embed_demos(&demos, &keys).await?;
            }
            Ok(compiled)
        };
        super::traced("KNNFewShot", trainset.len(), 0, run).await
    }

    /// [`compile`](Self::compile) for sync code. With an embedder, the examples are embedded by
    /// the first call that needs them instead.
    pub fn compile_blocking<P: Predictors + Clone>(
        &self,
        student: &P,
        trainset: &[Example],
    ) -> Result<Compiled<P, KnnReport>, OptimizeError> {
        Ok(self.build(student, trainset).0)
    }

    /// The compiled program, and the embedding selector its predictors share, if any.
    fn build<P: Predictors + Clone>(
        &self,
        student: &P,
        trainset: &[Example],
    ) -> (Compiled<P, KnnReport>, Option<Arc<EmbeddingDemos>>) {
        let mut keys: Vec<String> = Vec::new();
        for example in trainset {
            for key in example.input_keys() {
                if !keys.contains(key) {
                    keys.push(key.clone());
                }
            }
        }
        let embedding = self.embedder.as_ref().map(|embedder| {
            Arc::new(
                EmbeddingDemos::new(self.k, embedder.clone())
                    .on(keys.clone())
                    .most_similar_last(self.most_similar_last),
            )
        });
        let selector: Arc<dyn DemoSelector> = match &embedding {
            Some(embedding) => embedding.clone(),
            None => {
                let mut nearest = NearestDemos::new(self.k)
                    .on(keys.clone())
                    .most_similar_last(self.most_similar_last);
                if let Some(n) = self.char_ngrams {
                    nearest = nearest.with_char_ngrams(n);
                }
                Arc::new(nearest)
            }
        };
        let mut program = reset_copy(student);
        let mut predictors = Vec::new();
        for (path, predictor) in program.named_predictors_mut() {
            predictor.set_demos(trainset.iter().map(|e| e.values().clone()).collect());
            predictor.set_demo_selector(Some(selector.clone()));
            predictors.push(path);
        }
        let compiled = Compiled {
            program,
            report: KnnReport {
                pool: trainset.len(),
                k: self.k,
                keys,
                predictors,
                embedding: self.embedder.as_ref().map(|e| e.model().to_owned()),
            },
        };
        (compiled, embedding)
    }
}

/// `valset` is not used: the demos are chosen at each call, not compared.
/// [`compile`](KnnFewShot::compile) without one is the same compile.
impl<P: crate::module::Module + Clone> Optimizer<P> for KnnFewShot {
    type Report = KnnReport;

    async fn compile(
        &self,
        student: &P,
        trainset: &[Example],
        _valset: &[Example],
    ) -> Result<Compiled<P, KnnReport>, OptimizeError> {
        KnnFewShot::compile(self, student, trainset).await
    }
}
