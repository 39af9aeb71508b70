use signet::tool;

#[tool]
struct NotAFunction {
    x: i32,
}

fn main() {}
