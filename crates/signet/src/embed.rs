//! Embeddings and retrieval: the [`Embedder`] trait (DSPy's `dspy.Embedder`), a client for any
//! OpenAI-compatible `/v1/embeddings` endpoint, an embedder from a plain function, an in-memory
//! [`VectorIndex`] searched by cosine similarity (DSPy's `dspy.retrievers.Embeddings`), and a
//! [`RetrievalTool`] that gives a ReAct agent a `search` over it.
//!
//! * [`OpenAiEmbedder`] (feature `openai`): OpenAI, vLLM, llama.cpp (`LlamaCpp::embeddings` in
//!   `signet-local`), Ollama, ..; batches of 200 texts by default, as DSPy's.
//! * [`FnEmbedder`]: your own model or a test double, as `dspy.Embedder(callable)`.
//! * [`VectorIndex`]: documents (text and optional metadata) embedded once, top-k search.
//! * [`RetrievalTool`]: the index as a [`Tool`](crate::Tool) taking `{"query": string}`.
//!
//! Every failure is a typed [`EmbedError`]: the HTTP status (429 with its `Retry-After`), a reply
//! that does not fit (a wrong number of vectors, vectors of unequal length, a value that is not a
//! finite number), the transport.
//!
//! ```
//! use signet::embed::{Embedder, FnEmbedder, VectorIndex};
//!
//! // A toy embedder: how often each of three words occurs.
//! let embedder = FnEmbedder::new("counts", |texts: &[String]| {
//!     Ok::<_, String>(texts.iter().map(|t| {
//!         ["rain", "sun", "money"].iter().map(|w| t.matches(w).count() as f32).collect()
//!     }).collect())
//! });
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let mut index = VectorIndex::new(embedder);
//! index.add(["rain and more rain", "sun all day", "money matters"]).await.unwrap();
//! let hits = index.search("will there be sun?", 1).await.unwrap();
//! assert_eq!(hits[0].text, "sun all day");
//! # });
//! ```

mod error;
mod function;
mod index;
#[cfg(feature = "openai")]
mod openai;
mod retrieve;

use std::sync::Arc;

use futures::future::BoxFuture;

pub use error::EmbedError;
pub use function::FnEmbedder;
pub use index::{Document, Hit, VectorIndex};
#[cfg(feature = "openai")]
pub use openai::{OpenAiEmbedder, OpenAiEmbedderBuilder};
pub use retrieve::RetrievalTool;

pub(crate) use index::{normalized, rank};

/// How many texts one request embeds unless told otherwise: 200, DSPy's `Embedder` default.
///
/// ```
/// assert_eq!(signet::embed::DEFAULT_BATCH_SIZE, 200);
/// ```
pub const DEFAULT_BATCH_SIZE: usize = 200;

/// A model that turns texts into vectors: a batch of texts in, one vector per text out, in order,
/// every vector of the same length.
///
/// Implementations: [`OpenAiEmbedder`] for any OpenAI-compatible endpoint, [`FnEmbedder`] for a
/// function; `Arc<E>` and `Box<E>` of any `Embedder` (`Arc<dyn Embedder>` included) are
/// embedders too. Implementations check what they return ([`check_vectors`]), so callers can rely
/// on the count and the lengths.
///
/// ```
/// use futures::future::BoxFuture;
/// use signet::embed::{EmbedError, Embedder, check_vectors};
///
/// /// Every text as (length, 1).
/// struct Lengths;
///
/// impl Embedder for Lengths {
///     fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
///         let vectors = texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect();
///         Box::pin(async move { check_vectors(texts.len(), vectors) })
///     }
///     fn model(&self) -> &str { "lengths" }
/// }
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let vectors = Lengths.embed(&["abc".to_owned()]).await.unwrap();
/// assert_eq!(vectors, [vec![3.0, 1.0]]);
/// # });
/// ```
pub trait Embedder: Send + Sync {
    /// The vectors of `texts`, one per text, in order (an empty list for no texts).
    fn embed<'a>(&'a self, texts: &'a [String])
    -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>>;

    /// The model's name, for logs and saved indexes.
    fn model(&self) -> &str;
}

/// Shared and boxed embedders are embedders themselves (every method is forwarded).
///
/// ```
/// use std::sync::Arc;
/// use signet::embed::{Embedder, FnEmbedder};
/// let shared: Arc<dyn Embedder> = Arc::new(FnEmbedder::new("ones", |t: &[String]| {
///     Ok::<_, String>(vec![vec![1.0]; t.len()])
/// }));
/// assert_eq!(shared.model(), "ones");
/// ```
macro_rules! forward_embedder {
    ($($pointer:ident)::+) => {
        impl<E: Embedder + ?Sized> Embedder for $($pointer)::+<E> {
            fn embed<'a>(
                &'a self,
                texts: &'a [String],
            ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
                (**self).embed(texts)
            }
            fn model(&self) -> &str {
                (**self).model()
            }
        }
    };
}
forward_embedder!(std::sync::Arc);
forward_embedder!(Box);

/// `embedder` as the shared handle an index or a selector keeps: an `Arc<dyn Embedder>` as it is,
/// anything else in a new `Arc`.
pub(crate) fn shared<E: Embedder + 'static>(embedder: E) -> Arc<dyn Embedder> {
    crate::shared::share(embedder, |e| Arc::new(e) as Arc<dyn Embedder>)
}

/// `vectors` if they are a well-formed reply for `expected` texts: that many vectors, none empty,
/// all of one length, every value a finite number. Otherwise the [`EmbedError`] that says which
/// vector is wrong and how.
///
/// ```
/// use signet::embed::{EmbedError, check_vectors};
/// assert!(check_vectors(2, vec![vec![1.0, 0.0], vec![0.5, 0.5]]).is_ok());
/// assert_eq!(
///     check_vectors(2, vec![vec![1.0]]),
///     Err(EmbedError::WrongCount { expected: 2, got: 1 }),
/// );
/// assert_eq!(
///     check_vectors(2, vec![vec![1.0, 0.0], vec![1.0]]),
///     Err(EmbedError::UnequalDimensions { index: 1, expected: 2, got: 1 }),
/// );
/// assert_eq!(
///     check_vectors(1, vec![vec![f32::NAN]]),
///     Err(EmbedError::NotFinite { index: 0, position: 0 }),
/// );
/// ```
pub fn check_vectors(expected: usize, vectors: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>, EmbedError> {
    if vectors.len() != expected {
        return Err(EmbedError::WrongCount {
            expected,
            got: vectors.len(),
        });
    }
    let dimension = vectors.first().map_or(0, Vec::len);
    for (index, vector) in vectors.iter().enumerate() {
        if vector.is_empty() {
            return Err(EmbedError::EmptyVector { index });
        }
        if vector.len() != dimension {
            return Err(EmbedError::UnequalDimensions {
                index,
                expected: dimension,
                got: vector.len(),
            });
        }
        if let Some(position) = vector.iter().position(|v| !v.is_finite()) {
            return Err(EmbedError::NotFinite { index, position });
        }
    }
    Ok(vectors)
}

/// The vectors of `texts`, `batch_size` texts (at least one) at a time through `one_batch`, each
/// batch checked ([`check_vectors`]) and all of them of one length.
pub(crate) async fn in_batches<'a, F>(
    texts: &'a [String],
    batch_size: usize,
    mut one_batch: F,
) -> Result<Vec<Vec<f32>>, EmbedError>
where
    F: FnMut(&'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>>,
{
    let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
    for (number, batch) in texts.chunks(batch_size.max(1)).enumerate() {
        let offset = number * batch_size.max(1);
        let batch_vectors = check_vectors(batch.len(), one_batch(batch).await?)
            .map_err(|error| error.offset_by(offset))?;
        if let (Some(first), Some(next)) = (vectors.first(), batch_vectors.first())
            && first.len() != next.len()
        {
            return Err(EmbedError::UnequalDimensions {
                index: offset,
                expected: first.len(),
                got: next.len(),
            });
        }
        vectors.extend(batch_vectors);
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[tokio::test]
    async fn batches_are_checked_and_their_errors_name_the_text() {
        let texts: Vec<String> = (0..5).map(|i| i.to_string()).collect();
        let mut sizes = Vec::new();
        let vectors = in_batches(&texts, 2, |batch| {
            sizes.push(batch.len());
            let out = batch
                .iter()
                .map(|t| vec![t.parse::<f32>().unwrap_or(0.0), 1.0])
                .collect();
            async move { Ok(out) }.boxed()
        })
        .await
        .unwrap();
        assert_eq!(sizes, [2, 2, 1]);
        assert_eq!(vectors[4], [4.0, 1.0]);

        let error = in_batches(&texts, 2, |batch| {
            let dimension = if batch[0] == "2" { 3 } else { 2 };
            let out = vec![vec![0.5; dimension]; batch.len()];
            async move { Ok(out) }.boxed()
        })
        .await
        .unwrap_err();
        assert_eq!(
            error,
            EmbedError::UnequalDimensions {
                index: 2,
                expected: 2,
                got: 3
            }
        );

        let error = in_batches(&texts, 2, |batch| {
            let mut out = vec![vec![0.5; 2]; batch.len()];
            if batch[0] == "4" {
                out[0][1] = f32::INFINITY;
            }
            async move { Ok(out) }.boxed()
        })
        .await
        .unwrap_err();
        assert_eq!(
            error,
            EmbedError::NotFinite {
                index: 4,
                position: 1
            }
        );
    }

    #[tokio::test]
    async fn no_texts_make_no_call() {
        let vectors = in_batches(&[], 2, |_| {
            async {
                Err(EmbedError::Function {
                    message: "called".into(),
                })
            }
            .boxed()
        })
        .await
        .unwrap();
        assert!(vectors.is_empty());
    }
}
