use signet::tool;

struct Counter {
    n: u64,
}

#[tool]
impl Counter {
    /// Count.
    #[tool]
    fn bump(&mut self) -> u64 {
        self.n += 1;
        self.n
    }
}

fn main() {
    use signet::ToolBox;
    let _ = Counter::tools(&std::sync::Arc::new(Counter { n: 0 }));
}
