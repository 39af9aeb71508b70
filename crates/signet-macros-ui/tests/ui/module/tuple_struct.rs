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
struct Program(Predict<Ask>);

fn main() {}
