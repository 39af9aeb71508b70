use signet::tool;

/// Append.
#[tool]
fn append(list: &mut Vec<String>, item: String) {
    list.push(item);
}

fn main() {}
