use signet::tool;

/// Add a pair.
#[tool]
fn add((a, b): (i64, i64), _: bool) -> i64 {
    a + b
}

fn main() {
    use signet::Tool;
    let _ = AddTool.call_blocking(serde_json::json!({}));
}
