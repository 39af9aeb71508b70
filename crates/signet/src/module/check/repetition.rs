//! Replies that loop. TEMPORARY STUB (replaced by the real module).
#![allow(missing_docs, dead_code)]
pub struct Loop { pub phrase: String, pub repeats: usize, pub start: usize }
#[derive(Debug, Clone, Copy, Default)]
pub struct LoopRule { pub min_repeats: usize, pub min_words: usize, pub max_phrase_words: usize }
pub struct LoopDetector;
impl LoopDetector { pub fn new(_: LoopRule) -> LoopDetector { LoopDetector } pub fn push(&mut self, _: &str) -> Option<Loop> { None } }
pub fn find_loop(_: &str, _: LoopRule) -> Option<Loop> { None }
