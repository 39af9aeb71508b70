use signet::Signature;

#[derive(Signature)]
struct Qa {
    #[input]
    question: String,
    answer: String,
}

fn main() {}
