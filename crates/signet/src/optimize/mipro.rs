//! MIPROv2 (work in progress): DSPy's instruction and demo-set search.

#[allow(dead_code)]
mod tpe;
