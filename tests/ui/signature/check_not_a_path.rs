use signet::Signature;

/// Answer.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output(check = "not_empty")]
    answer: String,
}

fn main() {}
