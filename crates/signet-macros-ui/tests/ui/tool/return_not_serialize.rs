use signet::tool;

struct Opaque;

/// Make something opaque.
#[tool]
fn make() -> Opaque {
    Opaque
}

fn main() {}
