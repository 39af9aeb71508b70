//! A response cache keyed by the whole request: in memory, optionally backed by a directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Capabilities, Completion, Lm, LmError, LmRequest, StreamEvent, Usage};

/// Completions keyed by the model and every field of the request (messages, options, response
/// format, tools, tool choice, extra fields). Only successful completions are stored.
///
/// In memory by default ([`in_memory`](ResponseCache::in_memory)); [`on_disk`](ResponseCache::on_disk)
/// also keeps one JSON file per entry in a directory, named by a hash of the request, so that
/// the cache survives restarts (entries hold the full key, so a hash collision is a miss, never a
/// wrong answer). A hit is returned with [`Usage`] `{cache_hits: 1, lm_calls: 0}` and no tokens.
/// The cache has no size limit; [`clear`](ResponseCache::clear) empties it.
///
/// Share one cache between LMs (or with [`CachedLm`]) through an `Arc`.
///
/// ```
/// use signet::lm::{Completion, LmRequest, Message, ResponseCache};
///
/// let cache = ResponseCache::in_memory();
/// let request = LmRequest::new(vec![Message::user("2+2?")]);
/// assert!(cache.get("gpt-4o-mini", &request).is_none());
/// cache.put("gpt-4o-mini", &request, &Completion::text("4"));
/// let hit = cache.get("gpt-4o-mini", &request).unwrap();
/// assert_eq!(hit.text.as_deref(), Some("4"));
/// assert_eq!((hit.usage.cache_hits, hit.usage.lm_calls), (1, 0));
/// assert!(cache.get("another-model", &request).is_none());
/// ```
#[derive(Debug, Default)]
pub struct ResponseCache {
    memory: Mutex<HashMap<String, Completion>>,
    directory: Option<PathBuf>,
}

/// What a cache file holds.
#[derive(Serialize, Deserialize)]
struct DiskEntry {
    key: String,
    completion: Completion,
}

impl ResponseCache {
    /// An empty cache kept in memory only.
    pub fn in_memory() -> ResponseCache {
        ResponseCache::default()
    }

    /// A cache backed by `directory` (created if needed), with memory in front of it.
    ///
    /// ```
    /// use signet::lm::{Completion, LmRequest, ResponseCache};
    /// let dir = std::env::temp_dir().join(format!("signet-cache-doc-{}", std::process::id()));
    /// let request = LmRequest::default();
    /// ResponseCache::on_disk(&dir)?.put("m", &request, &Completion::text("kept"));
    /// let reopened = ResponseCache::on_disk(&dir)?;
    /// assert_eq!(reopened.get("m", &request).unwrap().text.as_deref(), Some("kept"));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn on_disk(directory: impl Into<PathBuf>) -> std::io::Result<ResponseCache> {
        let directory = directory.into();
        // Entries hold prompts and completions: a new directory is its owner's only.
        crate::fs_atomic::create_private_dir_all(&directory)?;
        Ok(ResponseCache {
            memory: Mutex::default(),
            directory: Some(directory),
        })
    }

    /// The directory behind the cache, if any.
    pub fn directory(&self) -> Option<&Path> {
        self.directory.as_deref()
    }

    /// The cache key of a request: a canonical JSON text of the model and every request field
    /// (object keys sorted, so `extra` fields in another order give the same key).
    ///
    /// ```
    /// use signet::lm::{LmRequest, ResponseCache};
    /// let mut a = LmRequest::default();
    /// a.extra.insert("x".into(), 1.into());
    /// a.extra.insert("y".into(), 2.into());
    /// let mut b = LmRequest::default();
    /// b.extra.insert("y".into(), 2.into());
    /// b.extra.insert("x".into(), 1.into());
    /// assert_eq!(ResponseCache::key("m", &a), ResponseCache::key("m", &b));
    /// b.options.temperature = Some(0.5);
    /// assert_ne!(ResponseCache::key("m", &a), ResponseCache::key("m", &b));
    /// ```
    pub fn key(model: &str, request: &LmRequest) -> String {
        let request = serde_json::to_value(request).unwrap_or(Value::Null);
        canonical(&json!({"model": model, "request": request})).to_string()
    }

    /// The cached completion for this request, marked as a cache hit.
    pub fn get(&self, model: &str, request: &LmRequest) -> Option<Completion> {
        let key = ResponseCache::key(model, request);
        let found = self.lock().get(&key).cloned();
        let found = found.or_else(|| {
            let completion = self.read_file(&key)?;
            self.lock().insert(key, completion.clone());
            Some(completion)
        });
        found.map(as_hit)
    }

    /// Stores a completion for this request (on disk too, when the cache has a directory; a disk
    /// failure is logged and otherwise ignored).
    pub fn put(&self, model: &str, request: &LmRequest, completion: &Completion) {
        let key = ResponseCache::key(model, request);
        self.write_file(&key, completion);
        self.lock().insert(key, completion.clone());
    }

    /// Entries held in memory.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no entry is held in memory.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Forgets every entry, in memory and on disk (the cache's own `*.json` files).
    pub fn clear(&self) {
        self.lock().clear();
        let Some(directory) = &self.directory else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(directory) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json")
                && let Err(error) = std::fs::remove_file(&path)
            {
                tracing::warn!(path = %path.display(), %error, "could not remove a cache file");
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Completion>> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        let directory = self.directory.as_ref()?;
        Some(directory.join(format!("{:032x}.json", fnv1a_128(key.as_bytes()))))
    }

    fn read_file(&self, key: &str) -> Option<Completion> {
        let path = self.path(key)?;
        let text = std::fs::read_to_string(&path).ok()?;
        match serde_json::from_str::<DiskEntry>(&text) {
            Ok(entry) if entry.key == key => Some(entry.completion),
            Ok(_) => None,
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "ignoring an unreadable cache file");
                None
            }
        }
    }

    fn write_file(&self, key: &str, completion: &Completion) {
        let Some(path) = self.path(key) else {
            return;
        };
        let entry = DiskEntry {
            key: key.to_owned(),
            completion: completion.clone(),
        };
        // Atomically, so a reader (this process or another) never sees half a file.
        let result = serde_json::to_vec_pretty(&entry)
            .map_err(std::io::Error::other)
            .and_then(|bytes| crate::fs_atomic::write_private(&path, &bytes));
        if let Err(error) = result {
            tracing::warn!(path = %path.display(), %error, "could not write a cache file");
        }
    }
}

/// A completion as returned from the cache: no tokens spent, one hit.
fn as_hit(mut completion: Completion) -> Completion {
    completion.usage = Usage {
        cache_hits: 1,
        ..Usage::default()
    };
    completion
}

/// `value` with every object's keys sorted.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let sorted: Map<String, Value> = keys
                .into_iter()
                .map(|k| (k.clone(), canonical(&map[k])))
                .collect();
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// FNV-1a, 128 bits: a stable file name for a key (std's hashers may change between releases).
fn fnv1a_128(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u128::from(*byte)).wrapping_mul(PRIME)
    })
}

/// Answers repeated requests to any [`Lm`] from a [`ResponseCache`].
///
/// [`OpenAiLm`](super::OpenAiLm) has the cache built in; wrap other LMs in this.
///
/// ```
/// use std::sync::Arc;
/// use signet::lm::{CachedLm, Lm, LmRequest, ResponseCache};
/// use signet::testing::ScriptedLm;
///
/// let lm = CachedLm::new(ScriptedLm::texts(["only once"]), Arc::new(ResponseCache::in_memory()));
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let request = LmRequest::default();
/// let first = lm.complete(&request).await.unwrap();
/// let second = lm.complete(&request).await.unwrap(); // the script is empty: from the cache
/// assert_eq!(first.text, second.text);
/// assert_eq!((second.usage.cache_hits, second.usage.lm_calls), (1, 0));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct CachedLm<L> {
    inner: L,
    cache: Arc<ResponseCache>,
}

impl<L: Lm> CachedLm<L> {
    /// Wraps `inner`, answering from `cache` when it can.
    pub fn new(inner: L, cache: Arc<ResponseCache>) -> CachedLm<L> {
        CachedLm { inner, cache }
    }

    /// The wrapped LM.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The cache.
    pub fn cache(&self) -> &Arc<ResponseCache> {
        &self.cache
    }
}

impl<L: Lm> Lm for CachedLm<L> {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        async move {
            let model = self.inner.model();
            if let Some(hit) = self.cache.get(model, request) {
                return Ok(hit);
            }
            let completion = self.inner.complete(request).await?;
            self.cache.put(model, request, &completion);
            Ok(completion)
        }
        .boxed()
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        cached_stream(&self.cache, self.inner.model(), request, || {
            self.inner.stream(request)
        })
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

/// A stream answered from `cache` when it holds the request, otherwise `open()`'s stream with its
/// final completion stored.
pub(crate) fn cached_stream<'a>(
    cache: &'a ResponseCache,
    model: &'a str,
    request: &'a LmRequest,
    open: impl FnOnce() -> BoxStream<'a, Result<StreamEvent, LmError>>,
) -> BoxStream<'a, Result<StreamEvent, LmError>> {
    if let Some(hit) = cache.get(model, request) {
        return stream::iter(super::completion_events(hit)).boxed();
    }
    super::on_done(open(), move |completion| {
        cache.put(model, request, completion)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::Message;

    #[test]
    fn disk_entries_survive_and_clear_removes_them() {
        let dir = std::env::temp_dir().join(format!(
            "signet-cache-test-{}-{}",
            std::process::id(),
            line!()
        ));
        let request = LmRequest::new(vec![Message::user("hi")]);
        {
            let cache = ResponseCache::on_disk(&dir).expect("a temp dir");
            let mut completion = Completion::text("hello");
            completion.usage.prompt_tokens = 5;
            cache.put("m", &request, &completion);
        }
        let cache = ResponseCache::on_disk(&dir).expect("a temp dir");
        assert!(cache.is_empty());
        let hit = cache.get("m", &request).expect("read back from disk");
        assert_eq!(hit.text.as_deref(), Some("hello"));
        assert_eq!(hit.usage.prompt_tokens, 0);
        assert_eq!(cache.len(), 1);

        // A file whose key does not match (a collision, or tampering) is a miss.
        let path = cache
            .path(&ResponseCache::key("m", &request))
            .expect("a path");
        let other = DiskEntry {
            key: "something else".into(),
            completion: Completion::text("wrong"),
        };
        std::fs::write(&path, serde_json::to_vec(&other).expect("json")).expect("write");
        let fresh = ResponseCache::on_disk(&dir).expect("a temp dir");
        assert!(fresh.get("m", &request).is_none());
        std::fs::write(&path, b"{not json").expect("write");
        assert!(fresh.get("m", &request).is_none());

        cache.clear();
        assert!(cache.is_empty());
        assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 0);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn every_field_is_part_of_the_key() {
        let base = LmRequest::new(vec![Message::user("hi")]);
        let mut variants = Vec::new();
        let mut r = base.clone();
        r.options.max_tokens = Some(3);
        variants.push(r);
        let mut r = base.clone();
        r.tools
            .push(crate::lm::ToolDefinition::new("f", "", json!({})));
        variants.push(r);
        let mut r = base.clone();
        r.parallel_tool_calls = Some(false);
        variants.push(r);
        let mut r = base.clone();
        r.messages.push(Message::assistant("x"));
        variants.push(r);
        let key = ResponseCache::key("m", &base);
        for variant in variants {
            assert_ne!(ResponseCache::key("m", &variant), key);
        }
    }
}
