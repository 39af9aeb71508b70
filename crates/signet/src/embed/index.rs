//! [`VectorIndex`]: documents embedded once and searched by cosine similarity, like DSPy's
//! `dspy.retrievers.Embeddings` (its brute-force search; no approximate index).

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{DEFAULT_BATCH_SIZE, EmbedError, Embedder, shared};

/// A document of an index: its text (what is embedded and returned) and optional metadata (a
/// source, an id, ..) returned with it.
///
/// ```
/// use serde_json::json;
/// use signet::embed::Document;
/// let plain: Document = "Oslo is the capital of Norway.".into();
/// assert_eq!(plain.metadata, None);
/// let sourced = Document::new("Bergen is rainy.").with_metadata(json!({"source": "guide.md"}));
/// assert_eq!(sourced.metadata.unwrap()["source"], "guide.md");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// The text.
    pub text: String,
    /// Anything to return with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl Document {
    /// A document with no metadata.
    pub fn new(text: impl Into<String>) -> Document {
        Document {
            text: text.into(),
            metadata: None,
        }
    }

    /// The document with `metadata`.
    pub fn with_metadata(mut self, metadata: Value) -> Document {
        self.metadata = Some(metadata);
        self
    }
}

impl From<&str> for Document {
    fn from(text: &str) -> Document {
        Document::new(text)
    }
}

impl From<String> for Document {
    fn from(text: String) -> Document {
        Document::new(text)
    }
}

/// One result of a search: the document's position in the index (DSPy's `indices`), its text
/// (DSPy's `passages`), its metadata and its cosine similarity to the query.
///
/// ```
/// use signet::embed::{FnEmbedder, VectorIndex};
/// let same = FnEmbedder::new("same", |t: &[String]| Ok::<_, String>(vec![vec![3.0, 4.0]; t.len()]));
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut index = VectorIndex::new(same);
/// index.add(["only"]).await.unwrap();
/// let hit = &index.search("anything", 1).await.unwrap()[0];
/// assert_eq!((hit.index, hit.text.as_str(), hit.score), (0, "only", 1.0));
/// assert_eq!(serde_json::to_value(hit).unwrap(), serde_json::json!({"index": 0, "text": "only", "score": 1.0}));
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The document's position in the index (the order documents were added in).
    pub index: usize,
    /// The document's text.
    pub text: String,
    /// The document's metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Cosine similarity to the query, in `[-1, 1]`.
    pub score: f32,
}

/// Documents embedded once, searched by cosine similarity: DSPy's
/// `dspy.retrievers.Embeddings(corpus, embedder, k)` without its FAISS stage (every search scores
/// every document, which is fast up to some hundred thousand vectors).
///
/// * [`add`](Self::add) embeds documents in batches of 200 ([`batch_size`](Self::batch_size)),
///   normalises their vectors once and keeps them; if any batch fails nothing is added.
/// * [`search`](Self::search) embeds the query and returns the `k` most similar documents, most
///   similar first; ties go to the document added first; `k` larger than the index returns every
///   document.
/// * A vector of zeros (an embedder that found nothing it knows in a text) has similarity 0 to
///   everything, as in DSPy: such a document is never preferred to one with a positive score, and
///   such a query scores every document 0 (they come back in the order they were added).
/// * A vector of another length than the index's is [`EmbedError::IndexDimension`].
///
/// [`save`](Self::save) writes documents and vectors to a JSON file;
/// [`load`](Self::load) reads them back with the embedder given again (checked by its model name),
/// so a corpus is embedded once.
///
/// ```
/// use signet::embed::{FnEmbedder, VectorIndex};
///
/// // Two dimensions: "cat" and "dog".
/// let embedder = FnEmbedder::new("pets", |texts: &[String]| {
///     Ok::<_, String>(texts.iter().map(|t| vec![t.matches("cat").count() as f32, t.matches("dog").count() as f32]).collect())
/// });
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut index = VectorIndex::new(embedder);
/// let added = index.add(["a cat", "a dog", "a cat and a dog", "a fish"]).await.unwrap();
/// assert_eq!(added, 0..4);
/// let hits = index.search("my dog", 2).await.unwrap();
/// assert_eq!((hits[0].index, hits[0].score), (1, 1.0));
/// assert_eq!(hits[1].text, "a cat and a dog");
/// // k larger than the index: everything, the fish (a zero vector) last.
/// assert_eq!(index.search("dog", 10).await.unwrap().len(), 4);
/// # });
/// ```
pub struct VectorIndex {
    embedder: Arc<dyn Embedder>,
    documents: Vec<Document>,
    /// Unit vectors (or zeros), one per document.
    vectors: Vec<Vec<f32>>,
    batch_size: usize,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("model", &self.embedder.model())
            .field("documents", &self.documents.len())
            .field("dimension", &self.dimension())
            .finish_non_exhaustive()
    }
}

/// What [`VectorIndex::save`] writes.
#[derive(Serialize, Deserialize)]
struct Saved {
    model: String,
    documents: Vec<SavedDocument>,
}

#[derive(Serialize, Deserialize)]
struct SavedDocument {
    #[serde(flatten)]
    document: Document,
    vector: Vec<f32>,
}

impl VectorIndex {
    /// An empty index whose documents and queries `embedder` embeds.
    pub fn new(embedder: impl Embedder + 'static) -> VectorIndex {
        VectorIndex {
            embedder: shared(embedder),
            documents: Vec::new(),
            vectors: Vec::new(),
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }

    /// How many documents [`add`](Self::add) embeds in one call of the embedder (0 counts as 1).
    pub fn batch_size(mut self, batch_size: usize) -> VectorIndex {
        self.batch_size = batch_size.max(1);
        self
    }

    /// Embeds `documents` (texts or [`Document`]s) and adds them; returns their positions. All
    /// or nothing: when the embedder fails, the index is unchanged.
    pub async fn add<D: Into<Document>>(
        &mut self,
        documents: impl IntoIterator<Item = D>,
    ) -> Result<std::ops::Range<usize>, EmbedError> {
        let documents: Vec<Document> = documents.into_iter().map(Into::into).collect();
        let texts: Vec<String> = documents.iter().map(|d| d.text.clone()).collect();
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            let embedded = super::check_vectors(batch.len(), self.embedder.embed(batch).await?)
                .map_err(|e| e.offset_by(vectors.len()))?;
            for vector in embedded {
                self.check_dimension(vectors.first().map(Vec::len), vector.len())?;
                vectors.push(normalized(vector));
            }
        }
        let start = self.documents.len();
        self.documents.extend(documents);
        self.vectors.extend(vectors);
        Ok(start..self.documents.len())
    }

    /// The `k` documents most similar to `query`, most similar first (see the
    /// [type's docs](Self) for ties, zero vectors and a `k` past the end).
    pub async fn search(&self, query: &str, k: usize) -> Result<Vec<Hit>, EmbedError> {
        let texts = [query.to_owned()];
        let vector = super::check_vectors(1, self.embedder.embed(&texts).await?)?
            .pop()
            .unwrap_or_default();
        self.search_vector(&vector, k)
    }

    /// The `k` documents most similar to `vector` (a query embedded elsewhere), most similar first.
    pub fn search_vector(&self, vector: &[f32], k: usize) -> Result<Vec<Hit>, EmbedError> {
        self.check_dimension(None, vector.len())?;
        if let Some(position) = vector.iter().position(|v| !v.is_finite()) {
            return Err(EmbedError::NotFinite { index: 0, position });
        }
        let query = normalized(vector.to_vec());
        Ok(rank(&query, self.vectors.iter().map(Vec::as_slice), k)
            .into_iter()
            .map(|(index, score)| Hit {
                index,
                text: self.documents[index].text.clone(),
                metadata: self.documents[index].metadata.clone(),
                score,
            })
            .collect())
    }

    /// The documents, in the order they were added.
    pub fn documents(&self) -> &[Document] {
        &self.documents
    }

    /// How many documents the index holds.
    pub fn len(&self) -> usize {
        self.documents.len()
    }

    /// Whether the index holds no documents.
    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }

    /// The length of the index's vectors (`None` while it is empty).
    pub fn dimension(&self) -> Option<usize> {
        self.vectors.first().map(Vec::len)
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// Writes the documents and their vectors to `path` as JSON (atomically: a reader never sees
    /// half a file), with the embedder's model name.
    ///
    /// ```
    /// use signet::embed::{FnEmbedder, VectorIndex};
    /// let ones = || FnEmbedder::new("ones", |t: &[String]| Ok::<_, String>(vec![vec![1.0, 0.5]; t.len()]));
    /// let path = std::env::temp_dir().join(format!("signet-index-doc-{}.json", std::process::id()));
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let mut index = VectorIndex::new(ones());
    /// index.add(["one", "two"]).await.unwrap();
    /// index.save(&path).unwrap();
    /// let loaded = VectorIndex::load(&path, ones()).unwrap();
    /// assert_eq!(loaded.documents(), index.documents());
    /// let other = FnEmbedder::new("other", |t: &[String]| Ok::<_, String>(vec![vec![1.0]; t.len()]));
    /// assert!(VectorIndex::load(&path, other).unwrap_err().to_string().contains("\"ones\""));
    /// # });
    /// # std::fs::remove_file(&path).ok();
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), EmbedError> {
        let path = path.as_ref();
        let saved = Saved {
            model: self.embedder.model().to_owned(),
            documents: self
                .documents
                .iter()
                .zip(&self.vectors)
                .map(|(document, vector)| SavedDocument {
                    document: document.clone(),
                    vector: vector.clone(),
                })
                .collect(),
        };
        let store = |reason: String| EmbedError::Store {
            path: path.to_owned(),
            reason,
        };
        let bytes = serde_json::to_vec(&saved).map_err(|e| store(e.to_string()))?;
        crate::fs_atomic::write_atomic(path, &bytes).map_err(|e| store(e.to_string()))
    }

    /// Reads an index [`save`](Self::save) wrote, to be searched with `embedder` — which must be
    /// the model that embedded it (its [`model`](Embedder::model) name is checked; the vectors'
    /// lengths are checked too).
    pub fn load(
        path: impl AsRef<Path>,
        embedder: impl Embedder + 'static,
    ) -> Result<VectorIndex, EmbedError> {
        let path = path.as_ref();
        let store = |reason: String| EmbedError::Store {
            path: path.to_owned(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|e| store(e.to_string()))?;
        let saved: Saved = serde_json::from_slice(&bytes).map_err(|e| store(e.to_string()))?;
        let mut index = VectorIndex::new(embedder);
        if saved.model != index.embedder.model() {
            return Err(store(format!(
                "it was embedded by {:?}, not by {:?}: load it with that embedder, or add its \
                 documents to a new index",
                saved.model,
                index.embedder.model()
            )));
        }
        let vectors: Vec<Vec<f32>> = saved.documents.iter().map(|d| d.vector.clone()).collect();
        let vectors =
            super::check_vectors(vectors.len(), vectors).map_err(|e| store(e.to_string()))?;
        index.vectors = vectors.into_iter().map(normalized).collect();
        index.documents = saved.documents.into_iter().map(|d| d.document).collect();
        Ok(index)
    }

    /// `got` against the index's length (or `first`, the first vector of a batch not added yet).
    fn check_dimension(&self, first: Option<usize>, got: usize) -> Result<(), EmbedError> {
        match self.dimension().or(first) {
            Some(index_dimension) if index_dimension != got => Err(EmbedError::IndexDimension {
                index_dimension,
                got,
            }),
            _ => Ok(()),
        }
    }
}

/// `vector` scaled to length 1; a vector of zeros stays zeros.
pub(crate) fn normalized(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector
        .iter()
        .map(|v| f64::from(*v) * f64::from(*v))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        for value in &mut vector {
            *value = (f64::from(*value) / norm) as f32;
        }
    }
    vector
}

/// The positions and scores (dot products) of the `k` of `vectors` nearest `query`, highest
/// first, the earlier one first on a tie. All vectors are unit vectors or zeros.
pub(crate) fn rank<'a>(
    query: &[f32],
    vectors: impl Iterator<Item = &'a [f32]>,
    k: usize,
) -> Vec<(usize, f32)> {
    let mut scored: Vec<(usize, f32)> = vectors
        .enumerate()
        .map(|(i, vector)| {
            let dot: f64 = vector
                .iter()
                .zip(query)
                .map(|(a, b)| f64::from(*a) * f64::from(*b))
                .sum();
            (i, dot.clamp(-1.0, 1.0) as f32)
        })
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(k);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::FnEmbedder;

    fn axes() -> FnEmbedder {
        // "x" and "y" count; "z" makes a vector of three dimensions.
        FnEmbedder::new("axes", |texts: &[String]| {
            Ok::<_, String>(
                texts
                    .iter()
                    .map(|t| {
                        let mut v =
                            vec![t.matches('x').count() as f32, t.matches('y').count() as f32];
                        if t.contains('z') {
                            v.push(1.0);
                        }
                        v
                    })
                    .collect(),
            )
        })
    }

    #[tokio::test]
    async fn ties_go_to_the_earlier_document_and_zero_vectors_score_zero() {
        let mut index = VectorIndex::new(axes());
        index.add(["-", "xx", "x", "y", "xy"]).await.unwrap();
        let hits = index.search("x", 5).await.unwrap();
        let order: Vec<usize> = hits.iter().map(|h| h.index).collect();
        assert_eq!(order, [1, 2, 4, 0, 3]);
        assert_eq!(hits[0].score, 1.0);
        assert_eq!(hits[3].score, 0.0);
        // A query of zeros: every score 0, in the order added.
        let hits = index.search("-", 3).await.unwrap();
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(index.search("x", 0).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn vectors_of_another_length_are_refused_and_nothing_is_added() {
        let mut index = VectorIndex::new(axes()).batch_size(1);
        index.add(["x"]).await.unwrap();
        let error = index.add(["y", "z"]).await.unwrap_err();
        assert_eq!(
            error,
            EmbedError::IndexDimension {
                index_dimension: 2,
                got: 3
            }
        );
        assert_eq!(index.len(), 1);
        let error = index.search("z", 1).await.unwrap_err();
        assert_eq!(
            error,
            EmbedError::IndexDimension {
                index_dimension: 2,
                got: 3
            }
        );
        assert!(matches!(
            index.search_vector(&[f32::NAN, 1.0], 1),
            Err(EmbedError::NotFinite { position: 0, .. })
        ));
    }

    #[tokio::test]
    async fn an_empty_index_finds_nothing() {
        let index = VectorIndex::new(axes());
        assert!(index.search("x", 3).await.unwrap().is_empty());
        assert_eq!(index.dimension(), None);
    }

    #[test]
    fn a_saved_index_that_is_not_json_is_a_store_error() {
        let path =
            std::env::temp_dir().join(format!("signet-index-bad-{}.json", std::process::id()));
        std::fs::write(&path, b"{not json").unwrap();
        let error = VectorIndex::load(&path, axes()).unwrap_err();
        assert!(matches!(error, EmbedError::Store { .. }), "{error}");
        std::fs::remove_file(&path).ok();
        let missing = VectorIndex::load(&path, axes()).unwrap_err();
        assert!(
            missing.to_string().contains("signet-index-bad"),
            "{missing}"
        );
    }
}
