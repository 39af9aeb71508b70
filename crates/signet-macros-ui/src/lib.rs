//! The compile-fail UI tests of the Signet macros live in `tests/`; this library is empty.
