use signet::tool;

struct Db;

#[tool]
impl Db {
    /// Consume the database.
    #[tool]
    fn close(self) -> bool {
        true
    }
}

fn main() {}
