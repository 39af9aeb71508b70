//! Compile-fail tests: every misuse of `#[tool]`, `#[derive(Signature)]` and `#[derive(Module)]`
//! is reported on the offending span with a message that says what to do. The expected messages
//! are the `.stderr` snapshots next to each case (regenerate with
//! `TRYBUILD=overwrite cargo test -p signet-macros-ui --test ui`).
//!
//! The cases use the macros through the facade (`signet::tool`, `signet::Signature`), as users
//! do. trybuild builds the package under test's dependencies and dev-dependencies again, in a
//! target directory of its own; from this package that is the facade with only its `derive`
//! feature, not its HTTP client and TLS stack, nor the workspace root's test stack.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/signature/*.rs");
    cases.compile_fail("tests/ui/tool/*.rs");
    cases.compile_fail("tests/ui/module/*.rs");
}
