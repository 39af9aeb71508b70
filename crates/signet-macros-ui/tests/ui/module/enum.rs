use signet::Module;

#[derive(Module)]
enum Program {
    Fast,
    Slow,
}

fn main() {}
