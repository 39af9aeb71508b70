use signet::Signature;

#[derive(Signature)]
struct Qa {
    #[input]
    #[output]
    question: String,
    #[output]
    answer: String,
}

fn main() {}
