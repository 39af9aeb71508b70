use signet::Signature;

fn not_empty(text: &str) -> Result<(), String> {
    if text.is_empty() { Err("empty".into()) } else { Ok(()) }
}

/// Answer.
#[derive(Signature)]
struct Ask {
    #[input(check = not_empty)]
    question: String,
    #[output(grounded)]
    answer: String,
}

fn main() {}
