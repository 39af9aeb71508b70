//! Helpers shared by signet-otel's integration tests.

#![allow(dead_code)]

pub mod phoenix;
