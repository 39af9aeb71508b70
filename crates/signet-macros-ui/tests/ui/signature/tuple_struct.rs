use signet::Signature;

#[derive(Signature)]
struct Qa(String, String);

fn main() {}
