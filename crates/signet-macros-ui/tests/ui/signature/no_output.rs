use signet::Signature;

#[derive(Signature)]
struct Qa {
    #[input]
    question: String,
}

fn main() {}
