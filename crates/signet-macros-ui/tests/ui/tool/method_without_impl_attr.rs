use signet::tool;

struct Db;

impl Db {
    /// Look a row up.
    #[tool]
    fn lookup(&self, key: String) -> String {
        key
    }
}

fn main() {}
