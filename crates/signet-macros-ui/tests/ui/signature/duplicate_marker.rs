use signet::Signature;

#[derive(Signature)]
struct Qa {
    #[input]
    #[input]
    question: String,
    #[output]
    answer: String,
}

fn main() {}
