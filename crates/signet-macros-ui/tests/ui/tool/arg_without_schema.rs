use signet::tool;

#[derive(serde::Deserialize)]
struct Opaque {
    value: String,
}

/// Read the value.
#[tool]
fn read(item: Opaque) -> String {
    item.value
}

fn main() {}
