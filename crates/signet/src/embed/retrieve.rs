//! [`RetrievalTool`]: a [`VectorIndex`] as a tool an agent calls with `{"query": "..."}`.

use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};

use super::VectorIndex;
use crate::tool::{Tool, ToolError, ToolFuture, ToolSpec};

/// A search over a [`VectorIndex`] as a [`Tool`]: named `search` (or [`named`](Self::named)), it
/// takes `{"query": string}` and returns the `k` most similar passages, most similar first — as
/// a list of texts, or with [`detailed`](Self::detailed) as objects with the document's position,
/// text, metadata and score. An embedder failure is a [`ToolError::Failed`] naming it, which a
/// ReAct agent sees as an observation.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use signet::Tool;
/// use signet::embed::{FnEmbedder, RetrievalTool, VectorIndex};
///
/// let embedder = FnEmbedder::new("rain-sun", |texts: &[String]| {
///     Ok::<_, String>(texts.iter().map(|t| vec![t.matches("rain").count() as f32, t.matches("sun").count() as f32]).collect())
/// });
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut index = VectorIndex::new(embedder);
/// index.add(["Bergen: rain, rain, rain.", "Seville: sun."]).await.unwrap();
/// let search = RetrievalTool::new(Arc::new(index), 1);
/// assert_eq!(search.name(), "search");
/// assert_eq!(search.call(json!({"query": "where is the sun?"})).await.unwrap(), json!(["Seville: sun."]));
/// assert!(search.call(json!({"question": "sun"})).await.is_err());
/// # });
/// ```
pub struct RetrievalTool {
    index: Arc<VectorIndex>,
    k: usize,
    detailed: bool,
    spec: ToolSpec,
}

impl std::fmt::Debug for RetrievalTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetrievalTool")
            .field("name", &self.spec.name())
            .field("k", &self.k)
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

/// The default description, as the model reads it.
const DESCRIPTION: &str = "Search the documents for passages relevant to the query; returns the most relevant passages, best first.";

fn spec(name: &str, description: &str) -> ToolSpec {
    ToolSpec::new(
        name,
        description,
        json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search for."}},
            "required": ["query"],
            "additionalProperties": false
        }),
    )
}

impl RetrievalTool {
    /// A tool named `search` that returns the `k` passages of `index` most similar to the query.
    pub fn new(index: Arc<VectorIndex>, k: usize) -> RetrievalTool {
        RetrievalTool {
            index,
            k,
            detailed: false,
            spec: spec("search", DESCRIPTION),
        }
    }

    /// The tool under another name and description (two indexes for one agent, say).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use signet::Tool;
    /// # use signet::embed::{FnEmbedder, RetrievalTool, VectorIndex};
    /// # let index = Arc::new(VectorIndex::new(FnEmbedder::new("e", |t: &[String]| Ok::<_, String>(vec![vec![1.0]; t.len()]))));
    /// let wiki = RetrievalTool::new(index, 3).named("search_wiki", "Search the wiki.");
    /// assert_eq!((wiki.name(), wiki.description()), ("search_wiki", "Search the wiki."));
    /// ```
    pub fn named(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> RetrievalTool {
        self.spec = spec(&name.into(), &description.into());
        self
    }

    /// Returns `[{"index", "text", "metadata", "score"}, ..]` instead of the texts alone.
    pub fn detailed(mut self, detailed: bool) -> RetrievalTool {
        self.detailed = detailed;
        self
    }

    /// The index searched.
    pub fn index(&self) -> &Arc<VectorIndex> {
        &self.index
    }
}

impl Tool for RetrievalTool {
    /// A search over an index: `datastore` in traces.
    fn tool_type(&self) -> crate::tool::ToolType {
        crate::tool::ToolType::Datastore
    }

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value) -> ToolFuture<'_> {
        async move {
            self.spec.validate(&args)?;
            let query = args["query"].as_str().unwrap_or_default();
            let hits =
                self.index
                    .search(query, self.k)
                    .await
                    .map_err(|error| ToolError::Failed {
                        tool: self.spec.name().to_owned(),
                        message: error.to_string(),
                    })?;
            Ok(if self.detailed {
                serde_json::to_value(&hits).unwrap_or(Value::Null)
            } else {
                Value::Array(
                    hits.into_iter()
                        .map(|hit| Value::String(hit.text))
                        .collect(),
                )
            })
        }
        .boxed()
    }
}
