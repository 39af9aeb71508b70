//! Compile-fail tests: every misuse of `#[tool]`, `#[derive(Signature)]` and `#[derive(Module)]` is reported on the
//! offending span with a message that says what to do. The expected messages are the `.stderr`
//! snapshots next to each case (regenerate with `TRYBUILD=overwrite cargo test --test ui`).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/signature/*.rs");
    cases.compile_fail("tests/ui/tool/*.rs");
    cases.compile_fail("tests/ui/module/*.rs");
}
