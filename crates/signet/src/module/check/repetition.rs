//! Replies that loop: the same phrase written again and again, as a small model does until the
//! token limit ("120 EUR is 120 EUR is 120 EUR is ..."). What the
//! [repetition guard](super::NoRepetition) stops.
//!
//! The text is read as words: split on whitespace, compared case-insensitively with the
//! punctuation around them trimmed, every number the same word (so "100 EUR is 150 EUR is 200 EUR
//! is" loops as "120 EUR is 120 EUR is" does). A **loop** is a phrase of `p` words (1 to
//! [`max_phrase_words`](LoopRule::max_phrase_words)) that comes `r` times in a row at the end of
//! the text so far, with `r` at least [`min_repeats`](LoopRule::min_repeats) and `p × r` at least
//! [`min_words`](LoopRule::min_words), and at least one word of the phrase not a number (a list
//! of numbers is no loop). [`LoopDetector`] finds it as the text streams, looking back only a
//! bounded number of words at each new one.
//!
//! ```
//! use signet::module::check::repetition::{LoopRule, find_loop};
//! let found = find_loop("Tomorrow in Bergen: 120 EUR is 120 EUR is 120 EUR is 120", LoopRule::default()).unwrap();
//! assert_eq!((found.phrase.as_str(), found.repeats), ("120 EUR is", 3));
//! assert!(find_loop("Tomorrow in Oslo: 4 °C, light rain.", LoopRule::default()).is_none());
//! ```

use std::collections::VecDeque;

/// A loop found in a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Loop {
    /// The phrase that repeats, as first written in the run of repeats.
    pub phrase: String,
    /// How many times it came in a row when the loop was found.
    pub repeats: usize,
    /// The byte offset where the run of repeats starts.
    pub start: usize,
}

/// When a run of repeats is a loop (see the [module](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopRule {
    /// The fewest repeats in a row (default 3).
    pub min_repeats: usize,
    /// The fewest words the repeats span together (default 9: "very very very" is no loop).
    pub min_words: usize,
    /// The longest phrase looked for, in words (default 12).
    pub max_phrase_words: usize,
}

impl Default for LoopRule {
    fn default() -> LoopRule {
        LoopRule {
            min_repeats: 3,
            min_words: 9,
            max_phrase_words: 12,
        }
    }
}

impl LoopRule {
    /// How many repeats of a phrase of `p` words make a loop.
    fn repeats_needed(&self, p: usize) -> usize {
        self.min_repeats
            .max(self.min_words.div_ceil(p.max(1)))
            .max(2)
    }

    /// How many words are kept to look back over.
    fn window(&self) -> usize {
        (1..=self.max_phrase_words.max(1))
            .map(|p| p * self.repeats_needed(p))
            .max()
            .unwrap_or(0)
    }
}

/// The longest part of a word compared (a longer "word" is no word a loop is made of).
const MAX_WORD: usize = 64;

/// A word as loops compare it, and where it is.
#[derive(Debug, Clone)]
struct Word {
    /// Lower case, punctuation trimmed; every number is `#`.
    key: String,
    /// As written (punctuation trimmed), for the phrase reported.
    written: String,
    start: usize,
}

/// Finds a loop in a text as it streams: [`push`](Self::push) each piece; it returns the loop once
/// one is written (and every piece after, once it has). Each piece costs its length and a look
/// back over a bounded number of words, however long the text.
///
/// ```
/// use signet::module::check::repetition::{LoopDetector, LoopRule};
/// let mut detector = LoopDetector::new(LoopRule::default());
/// assert!(detector.push("6.40 eur is 6.40 eur ").is_none());
/// assert!(detector.push("is 6.40 eur is ").is_some());
/// ```
#[derive(Debug, Clone)]
pub struct LoopDetector {
    rule: LoopRule,
    words: VecDeque<Word>,
    /// The word being written: its key and written form so far (bounded), and where it started.
    partial: Option<(String, usize)>,
    /// Bytes read so far.
    offset: usize,
    found: Option<Loop>,
}

impl LoopDetector {
    /// A detector of loops by `rule`.
    pub fn new(rule: LoopRule) -> LoopDetector {
        LoopDetector {
            rule,
            words: VecDeque::new(),
            partial: None,
            offset: 0,
            found: None,
        }
    }

    /// Reads `delta`; the loop, once one is complete.
    pub fn push(&mut self, delta: &str) -> Option<Loop> {
        if self.found.is_some() {
            return self.found.clone();
        }
        for (at, c) in delta.char_indices() {
            let position = self.offset + at;
            if c.is_whitespace() {
                if let Some((word, start)) = self.partial.take() {
                    self.word_done(&word, start);
                    if self.found.is_some() {
                        break;
                    }
                }
            } else {
                match &mut self.partial {
                    Some((word, _)) if word.len() < MAX_WORD => word.push(c),
                    Some(_) => {}
                    None => self.partial = Some((c.to_string(), position)),
                }
            }
        }
        self.offset += delta.len();
        self.found.clone()
    }

    /// The text ended: its last word counts too.
    pub fn finish(&mut self) -> Option<Loop> {
        if self.found.is_none()
            && let Some((word, start)) = self.partial.take()
        {
            self.word_done(&word, start);
        }
        self.found.clone()
    }

    fn word_done(&mut self, raw: &str, start: usize) {
        let written = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if written.is_empty() {
            return;
        }
        let number = written.chars().any(|c| c.is_ascii_digit())
            && written
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '\''));
        let key = if number {
            "#".to_owned()
        } else {
            written.to_lowercase()
        };
        self.words.push_back(Word {
            key,
            written: written.to_owned(),
            start,
        });
        let window = self.rule.window();
        while self.words.len() > window {
            self.words.pop_front();
        }
        self.found = self.loop_at_end();
    }

    /// The loop the words end with, if they end with one.
    fn loop_at_end(&self) -> Option<Loop> {
        let n = self.words.len();
        for p in 1..=self.rule.max_phrase_words.max(1) {
            let needed = self.rule.repeats_needed(p);
            if p * needed > n {
                break;
            }
            let same = |a: usize, b: usize| self.words[a].key == self.words[b].key;
            let phrase = n - p..n;
            if phrase.clone().all(|i| self.words[i].key == "#") {
                continue;
            }
            let mut repeats = 1;
            while repeats < needed {
                let earlier = n - (repeats + 1) * p;
                if !(0..p).all(|k| same(earlier + k, phrase.start + k)) {
                    break;
                }
                repeats += 1;
            }
            if repeats >= needed {
                let first = n - repeats * p;
                let phrase = (first..first + p)
                    .map(|i| self.words[i].written.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                return Some(Loop {
                    phrase,
                    repeats,
                    start: self.words[first].start,
                });
            }
        }
        None
    }
}

/// The loop in a whole `text`, if it has one (the first found as it is read).
pub fn find_loop(text: &str, rule: LoopRule) -> Option<Loop> {
    let mut detector = LoopDetector::new(rule);
    detector.push(text).or_else(|| detector.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOPS: [(&str, &str); 5] = [
        (
            "Tomorrow in Bergen: €80,00 is 120 EUR is 120 EUR is 120 EUR is 120 EUR is 120 EUR",
            "120 EUR is",
        ),
        (
            "Tomorrow in Kristiansand: 6.40 eur is 6.40 eur is 6.40 eur is 6.40 eur is",
            "6.40 eur is",
        ),
        (
            "Budget 3,000 EUR is 3,000 EUR. Weather in Trondheim tommorow is 3,000 EUR. Weather in \
             Trondheim tommorow is 3,000 EUR. Weather in Trondheim tommorow is 3,000 EUR.",
            "Weather in Trondheim tommorow is 3,000 EUR",
        ),
        (
            "In kroner: 1 leap year is 180 days, 180 days, 180 days, 180 days, 180 days, 180 days,",
            "180 days",
        ),
        (
            "In kroner: 75 EUR is 100 EUR is 150 EUR is 200 EUR is 250 EUR is 300 EUR is",
            "EUR is 100",
        ),
    ];

    #[test]
    fn the_loops_a_small_model_wrote_are_found() {
        for (text, phrase) in LOOPS {
            let found = find_loop(text, LoopRule::default())
                .unwrap_or_else(|| panic!("no loop found in {text:?}"));
            let key = |t: &str| {
                t.split_whitespace()
                    .map(|w| {
                        let w = w
                            .trim_matches(|c: char| !c.is_alphanumeric())
                            .to_lowercase();
                        if w.chars().any(|c| c.is_ascii_digit()) {
                            "#".to_owned()
                        } else {
                            w
                        }
                    })
                    .collect::<Vec<_>>()
            };
            // The same phrase up to where the run of repeats starts (a rotation of it).
            let (mut want, got) = (key(phrase), key(&found.phrase));
            assert_eq!(want.len(), got.len(), "{text:?}: {found:?}");
            let rotated = (0..want.len()).any(|_| {
                want.rotate_left(1);
                want == got
            });
            assert!(rotated, "{text:?}: {found:?}");
            assert!(found.start < text.len());
        }
    }

    #[test]
    fn answers_prose_and_lists_are_no_loops() {
        let prose = "Norway has a long coast. Its fjords were cut by glaciers over many ice ages, \
            and the towns along them grew from fishing and trade. Bergen was a Hanseatic port; \
            Trondheim was the old capital, and Oslo became the capital later. Today most people \
            live in the south, where the winters are milder and the summers long and light. \
            In the north, the sun does not set for weeks in summer and does not rise for weeks \
            in winter, and the northern lights are seen on clear nights from September to March.";
        for text in [
            "Tomorrow in Oslo: 4 °C, light rain. In kroner: 200 EUR is 2340.00 NOK.",
            prose,
            "Oslo, Bergen, Tromsø, Lillehammer, Stavanger, Trondheim, Bodø, Ålesund, Kristiansand, Narvik, Hammerfest",
            "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15",
            "very very very good",
        ] {
            assert_eq!(find_loop(text, LoopRule::default()), None, "{text:?}");
        }
    }

    #[test]
    fn streaming_in_any_chunks_finds_the_same_loop() {
        for (text, _) in LOOPS {
            let whole = find_loop(text, LoopRule::default());
            for size in [1, 3, 7] {
                let mut detector = LoopDetector::new(LoopRule::default());
                let mut found = None;
                let mut rest = text;
                while !rest.is_empty() && found.is_none() {
                    let mut end = size.min(rest.len());
                    while !rest.is_char_boundary(end) {
                        end += 1;
                    }
                    found = detector.push(&rest[..end]);
                    rest = &rest[end..];
                }
                let found = found.or_else(|| detector.finish());
                assert_eq!(found, whole, "{text:?} in chunks of {size}");
            }
        }
    }

    #[test]
    fn a_huge_stream_is_read_in_bounded_steps() {
        let mut detector = LoopDetector::new(LoopRule::default());
        let piece = "word ".repeat(800);
        assert!(
            detector.push(&piece).is_some(),
            "one word repeated is a loop"
        );
        let mut detector = LoopDetector::new(LoopRule::default());
        let chunk = "x".repeat(4096);
        for _ in 0..256 {
            assert!(detector.push(&chunk).is_none());
        }
        assert!(detector.finish().is_none());
        let text: String = (0..200_000).map(|i| format!("w{i} ")).collect();
        assert!(find_loop(&text, LoopRule::default()).is_none());
    }
}
