use signet::tool;

/// Search.
#[tool]
fn search(#[arg(default)] k: u32, #[arg(description = "q")] query: String) -> u32 {
    let _ = query;
    k
}

fn main() {}
