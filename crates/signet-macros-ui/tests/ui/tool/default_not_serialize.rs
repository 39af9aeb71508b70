use signet::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
enum Mode {
    Fast,
    Slow,
}

/// Run.
#[tool]
fn run(#[arg(default = Mode::Fast)] mode: Mode) -> bool {
    matches!(mode, Mode::Slow)
}

fn main() {}
