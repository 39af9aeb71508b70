//! MCP tool results from a server, as arbitrary JSON: whatever deserializes as a `CallToolResult`
//! converts to a value and an error message without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use signet_mcp::content::{error_text, result_value};
use signet_mcp::rmcp::model::CallToolResult;

fuzz_target!(|data: &[u8]| {
    signet_fuzz::on_small_stack(|| {
        let Ok(result) = serde_json::from_slice::<CallToolResult>(data) else {
            return;
        };
        let value = result_value(&result);
        let _ = error_text(&result);
        // A single text item without structured content is always that text.
        if let [only] = result.content.as_slice()
            && result.structured_content.is_none()
            && let Some(text) = only.as_text()
        {
            assert_eq!(value, serde_json::Value::String(text.text.clone()));
        }
    });
});
