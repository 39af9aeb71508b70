//! `#[tool]` on an impl block: methods taking `&self` become tools that share one value, and mix
//! freely with function tools and closure tools as `Arc<dyn Tool>`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use signet::tool::FnTool;
use signet::{Tool, ToolBox, ToolError, tool};

/// A tiny key-value store standing in for a database handle.
#[derive(Default)]
struct Store {
    rows: Mutex<HashMap<String, String>>,
    calls: AtomicUsize,
}

#[tool]
impl Store {
    /// Save a value under a key.
    #[tool]
    fn put(&self, key: String, value: String) -> usize {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut rows = self.rows.lock().unwrap();
        rows.insert(key, value);
        rows.len()
    }

    /// Read the value saved under a key.
    #[tool(name = "get")]
    async fn fetch(&self, key: &str) -> Result<String, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        self.rows
            .lock()
            .unwrap()
            .get(key)
            .cloned()
            .ok_or_else(|| format!("no row `{key}`"))
    }

    /// Not a tool: ordinary methods stay as they are.
    fn row_count(&self) -> usize {
        self.rows.lock().unwrap().len()
    }
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::test]
async fn method_tools_share_state() {
    let store = Arc::new(Store::default());
    let tools = Store::tools(&store);
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["put", "get"]);
    assert_eq!(tools[0].description(), "Save a value under a key.");

    assert_eq!(
        tools[0]
            .call(json!({"key": "a", "value": "1"}))
            .await
            .unwrap(),
        1
    );
    assert_eq!(tools[1].call(json!({"key": "a"})).await.unwrap(), "1");
    assert_eq!(
        tools[1].call(json!({"key": "zz"})).await.unwrap_err(),
        ToolError::Failed {
            tool: "get".into(),
            message: "no row `zz`".into()
        }
    );
    // The tools and the caller see the same value.
    assert_eq!(store.row_count(), 1);
    assert_eq!(store.calls.load(Ordering::SeqCst), 3);
    assert_eq!(Arc::strong_count(&store), 3);
    drop(tools);
    assert_eq!(Arc::strong_count(&store), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_on_one_value() {
    let store = Arc::new(Store::default());
    let tools = Store::tools(&store);
    let puts = (0..50).map(|i| tools[0].call(json!({"key": format!("k{i}"), "value": "v"})));
    for result in futures::future::join_all(puts).await {
        result.unwrap();
    }
    assert_eq!(store.row_count(), 50);
}

#[tokio::test]
async fn macro_method_and_closure_tools_side_by_side() {
    let store = Arc::new(Store::default());
    let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(AddTool)];
    tools.extend(Store::tools(&store));
    tools.push(Arc::new(
        FnTool::builder("shout")
            .description("Upper-case the text.")
            .schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
            .async_fn(|args| async move {
                Ok::<_, String>(args["text"].as_str().unwrap_or_default().to_uppercase())
            }),
    ));
    let by_name = |name: &str| tools.iter().find(|t| t.name() == name).unwrap().clone();
    assert_eq!(
        by_name("add").call(json!({"a": 2, "b": 3})).await.unwrap(),
        5
    );
    assert_eq!(
        by_name("put")
            .call(json!({"key": "k", "value": "v"}))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        by_name("shout").call(json!({"text": "hi"})).await.unwrap(),
        "HI"
    );
    let err = by_name("shout").call(json!({"text": 1})).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments for tool `shout`: argument `text`: expected string, got integer 1"
    );
    let descriptors: Vec<String> = tools
        .iter()
        .map(|t| t.to_openai_function()["function"]["name"].to_string())
        .collect();
    assert_eq!(descriptors, ["\"add\"", "\"put\"", "\"get\"", "\"shout\""]);
}

#[test]
fn closure_tools_with_an_invalid_schema_fail_on_call_not_at_construction() {
    let broken = FnTool::builder("broken")
        .schema(json!({"type": "object", "properties": {"a": {"type": 12}}}))
        .sync_fn(|_| Ok::<_, String>(0));
    assert!(matches!(
        broken.call_blocking(json!({})),
        Err(ToolError::InvalidSchema { .. })
    ));
}

#[test]
fn confirm_flag_is_visible_to_callers() {
    /// Delete everything.
    #[tool(confirm)]
    fn wipe() -> bool {
        true
    }
    assert!(WipeTool.requires_confirmation());
    assert!(!AddTool.requires_confirmation());
}
