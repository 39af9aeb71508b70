use signet::Signature;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Opaque {
    value: String,
}

#[derive(Signature)]
struct Qa {
    #[input]
    question: String,
    #[output]
    answer: Opaque,
}

fn main() {}
