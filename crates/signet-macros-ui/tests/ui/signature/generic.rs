use signet::Signature;

#[derive(Signature)]
struct Qa<T> {
    #[input]
    question: T,
    #[output]
    answer: String,
}

fn main() {}
