use signet::Signature;

#[derive(Signature)]
struct Qa {
    question: String,
    #[output]
    #[output]
    answer: String,
    #[input(desk = "typo")]
    context: String,
}

fn main() {}
