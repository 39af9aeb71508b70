use signet::Signature;

#[derive(Signature)]
struct Qa {
    #[input]
    question: String,
    answer: String,
}

fn main() {
    use signet::Signature;
    let _ = Qa::signature();
    let _ = QaInput {};
}
