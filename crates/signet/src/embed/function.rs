//! [`FnEmbedder`]: an embedder from a plain function, as DSPy's `Embedder(callable)`.

use std::fmt;
use std::fmt::Display;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::{DEFAULT_BATCH_SIZE, EmbedError, Embedder, in_batches};

type EmbedFn = dyn Fn(&[String]) -> Result<Vec<Vec<f32>>, String> + Send + Sync;

/// An embedder that calls a function with batches of texts (at most
/// [`batch_size`](Self::batch_size) at a time, 200 by default): a local model, a test double, a
/// hashing embedder. What the function returns is checked ([`check_vectors`](super::check_vectors)):
/// a wrong count, unequal lengths or a non-finite value is a typed [`EmbedError`], and its own
/// error is [`EmbedError::Function`].
///
/// The function runs on the calling task: one that takes long (a model on the CPU) should be
/// given a thread of its own by the caller, or wrapped in an [`Embedder`] that uses
/// `tokio::task::spawn_blocking`.
///
/// ```
/// use signet::embed::{EmbedError, Embedder, FnEmbedder};
///
/// let embedder = FnEmbedder::new("first-letters", |texts: &[String]| {
///     Ok::<_, String>(texts.iter().map(|t| {
///         let first = t.chars().next().map_or(0.0, |c| c as u32 as f32);
///         vec![first, 1.0]
///     }).collect())
/// })
/// .batch_size(2);
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let texts: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
/// assert_eq!(embedder.embed(&texts).await.unwrap()[2], [99.0, 1.0]);
///
/// let broken = FnEmbedder::new("broken", |_: &[String]| Err::<Vec<Vec<f32>>, _>("model not loaded"));
/// assert_eq!(
///     broken.embed(&texts).await.unwrap_err(),
///     EmbedError::Function { message: "model not loaded".into() },
/// );
/// # });
/// ```
pub struct FnEmbedder {
    name: String,
    function: Box<EmbedFn>,
    batch_size: usize,
}

impl fmt::Debug for FnEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnEmbedder")
            .field("name", &self.name)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl FnEmbedder {
    /// An embedder named `name` (its [`model`](Embedder::model)) that calls `function`.
    pub fn new<F, E>(name: impl Into<String>, function: F) -> FnEmbedder
    where
        F: Fn(&[String]) -> Result<Vec<Vec<f32>>, E> + Send + Sync + 'static,
        E: Display,
    {
        FnEmbedder {
            name: name.into(),
            function: Box::new(move |texts| function(texts).map_err(|e| e.to_string())),
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }

    /// The most texts one call of the function gets (0 counts as 1).
    pub fn batch_size(mut self, batch_size: usize) -> FnEmbedder {
        self.batch_size = batch_size.max(1);
        self
    }
}

impl Embedder for FnEmbedder {
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        in_batches(texts, self.batch_size, move |batch| {
            let result = (self.function)(batch).map_err(|message| EmbedError::Function { message });
            async move { result }.boxed()
        })
        .boxed()
    }

    fn model(&self) -> &str {
        &self.name
    }
}
