//! Figures (numbers with their units) read from text. TEMPORARY STUB (replaced by the real module).
#![allow(missing_docs, dead_code)]
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unit(String);
#[derive(Debug, Clone, Default)]
pub struct Units;
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureKind { Number, Date, Time }
#[derive(Debug, Clone)]
pub struct Figure { pub value: f64, pub decimals: u32, pub unit: Option<Unit>, pub text: String, pub span: std::ops::Range<usize>, pub kind: FigureKind }
pub fn figures(_: &str, _: &Units) -> Vec<Figure> { Vec::new() }
pub fn settled_figures(_: &str, _: &Units) -> Vec<Figure> { Vec::new() }
impl Figure { pub fn states(&self, s: &Figure) -> bool { self.value == s.value } }
