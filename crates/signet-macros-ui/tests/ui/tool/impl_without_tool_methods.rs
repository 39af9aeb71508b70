use signet::tool;

struct Db;

#[tool]
impl Db {
    fn helper(&self) -> u8 {
        0
    }
}

fn main() {}
