use signet::prelude::*;

/// Answer.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
}

#[derive(Module)]
struct Program {
    answer: Predict<Ask>,
    #[module(skp)]
    notes: String,
}

fn main() {}
