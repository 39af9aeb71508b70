use signet::Signature;

/// Answer.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output(check = 42)]
    answer: String,
}

fn main() {}
