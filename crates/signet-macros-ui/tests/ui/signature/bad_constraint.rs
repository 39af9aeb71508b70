use signet::Signature;

#[derive(Signature)]
struct Qa {
    #[input(max_length = "long")]
    question: String,
    #[output(ge = true)]
    answer: f64,
}

fn main() {}
