use signet::Signature;

fn positive(value: &i64) -> Result<(), String> {
    if *value > 0 { Ok(()) } else { Err("not positive".into()) }
}

/// Answer.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output(check = positive)]
    answer: String,
}

fn main() {}
