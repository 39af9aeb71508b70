//! Compile-fail tests: every misuse of `#[tool]`, `#[derive(Signature)]` and `#[derive(Module)]` is reported on the
//! offending span with a message that says what to do. The expected messages are the `.stderr`
//! snapshots next to each case (regenerate with `TRYBUILD=overwrite cargo test -p signet --test ui`).
//!
//! They live in the facade crate, not the workspace root, so that trybuild's check of the cases
//! builds only the facade's dependencies (trybuild builds the crate under test's dependencies and
//! dev-dependencies again, in a target directory of its own), not the root package's test stack
//! (axum, wiremock, proptest, the local model crate).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/signature/*.rs");
    cases.compile_fail("tests/ui/tool/*.rs");
    cases.compile_fail("tests/ui/module/*.rs");
}
