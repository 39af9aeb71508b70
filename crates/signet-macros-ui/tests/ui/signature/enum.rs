use signet::Signature;

#[derive(Signature)]
enum Qa {
    Question,
}

fn main() {}
