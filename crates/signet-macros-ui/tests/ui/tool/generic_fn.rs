use signet::tool;

/// Echo anything.
#[tool]
fn echo<T: serde::Serialize>(value: T) -> T {
    value
}

fn main() {
    use signet::Tool;
    let _ = EchoTool.name();
}
