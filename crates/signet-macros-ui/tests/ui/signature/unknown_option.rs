use signet::Signature;

#[derive(Signature)]
struct Qa {
    #[input(description = "the question")]
    question: String,
    #[output]
    answer: String,
}

fn main() {}
