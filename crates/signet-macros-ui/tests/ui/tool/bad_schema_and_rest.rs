use signet::tool;

/// Search.
#[tool]
fn search(
    #[arg(schema)] query: String,
    #[arg(rest, default = 1)] extra: serde_json::Map<String, serde_json::Value>,
    #[arg(rest)] more: serde_json::Map<String, serde_json::Value>,
) -> String {
    let _ = (extra, more);
    query
}

fn main() {}
