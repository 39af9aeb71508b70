//! Replies that loop: a phrase repeated over and over.
//!
//! Small models sometimes write `"120 EUR is 120 EUR is 120 EUR is ..."` until the token limit. A
//! [`LoopDetector`] is fed the reply as it streams and says so as soon as such a run is complete,
//! so that the caller can stop the stream; [`find_loop`] does the same on a whole text.
//!
//! # Rules
//!
//! * Words are the text split on whitespace. Two words are the same when they are equal once
//!   lower-cased with the punctuation around them trimmed (`"EUR."` and `"eur"`, `"120,"` and
//!   `"120"`; a number keeps its inner separators, so `"6.40"` stays `"6.40"`). A word of punctuation
//!   only (`"="`) is compared as written.
//! * A word is a number when, trimmed, it is digits with `.` `,` `'` between them. Two numbers also
//!   match each other whatever their values, so that `"75 EUR is 100 EUR is 150 EUR is ..."` is a
//!   loop of `"N EUR is"`. A phrase of numbers only is never a loop (`"1, 2, 3, 4, ..."`).
//! * A loop is a phrase of `p` words (`1 <= p <= max_phrase_words`) repeated `r` times in a row at
//!   the end of the text so far, with `p * r >= min_words` and either `r >= min_repeats` copies that
//!   are the same word for word, or `r >= pattern_repeats` copies that differ only in their numbers.
//!   The higher bar for patterns keeps a short list such as `"Day 1: 4 °C. Day 2: 5 °C. Day 3: 3
//!   °C."` from counting; a list of five or more such items does count.
//! * The shortest such phrase is reported. Its run is taken back word by word as far as the words
//!   keep repeating, and `start`, `phrase` and `repeats` describe that whole run: `phrase` is the run's
//!   first `p` words as written, joined by single spaces.
//! * The check runs when a word completes (whitespace arrives after it, or the text ends: see
//!   [`LoopDetector::finish`]), over a bounded window of the last words, so each push costs time
//!   linear in the delta (plus a bounded amount per completed word) whatever the length of the text.
//!   Words are compared by a 64-bit fingerprint of their normalized form and its length.

use std::collections::VecDeque;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// A loop found in a reply: the phrase that repeats and how many times it came in a row.
///
/// ```
/// use signet::module::check::repetition::{find_loop, LoopRule};
///
/// let found = find_loop("120 EUR is 120 EUR is 120 EUR is ", LoopRule::default()).unwrap();
/// assert_eq!((found.phrase.as_str(), found.repeats, found.start), ("120 EUR is", 3, 0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    /// The repeating phrase, as first written in the run (its words joined by single spaces).
    pub phrase: String,
    /// How many times the phrase came in a row when the loop was found.
    pub repeats: usize,
    /// The byte offset where the repeated run starts.
    pub start: usize,
}

/// When a run of repeats is a loop.
///
/// ```
/// use signet::module::check::repetition::{find_loop, LoopRule};
///
/// let strict = LoopRule { min_repeats: 4, ..LoopRule::default() };
/// assert!(find_loop("120 EUR is 120 EUR is 120 EUR is ", strict).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopRule {
    /// The fewest copies, word for word, of a phrase in a row (default 3; below 2 reads as 2).
    pub min_repeats: usize,
    /// The fewest words the whole run must have (default 9).
    pub min_words: usize,
    /// The longest phrase, in words, that is looked for (default 12).
    pub max_phrase_words: usize,
    /// The fewest copies in a row when the copies differ in their numbers (default 5; never fewer
    /// than `min_repeats`).
    pub pattern_repeats: usize,
}

impl Default for LoopRule {
    /// `min_repeats: 3, min_words: 9, max_phrase_words: 12, pattern_repeats: 5`.
    fn default() -> LoopRule {
        LoopRule {
            min_repeats: 3,
            min_words: 9,
            max_phrase_words: 12,
            pattern_repeats: 5,
        }
    }
}

/// A completed word of the window.
#[derive(Clone, Debug)]
struct Word {
    /// As written.
    text: String,
    /// Fingerprint of the normalized form.
    fingerprint: u64,
    /// Length of the normalized form.
    len: usize,
    number: bool,
    /// Byte offset in the whole text.
    start: usize,
}

impl Word {
    fn new(text: String, start: usize) -> Word {
        let trimmed = text.trim_matches(|c: char| !c.is_alphanumeric());
        let number = trimmed.bytes().any(|b| b.is_ascii_digit())
            && trimmed
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '\'' | '’'));
        let base = if trimmed.is_empty() {
            text.as_str()
        } else {
            trimmed
        };
        let normalized = base.to_lowercase();
        let mut hasher = DefaultHasher::new();
        normalized.hash(&mut hasher);
        Word {
            fingerprint: hasher.finish(),
            len: normalized.len(),
            number,
            start,
            text,
        }
    }

    fn same(&self, other: &Word) -> bool {
        self.fingerprint == other.fingerprint && self.len == other.len
    }

    fn alike(&self, other: &Word) -> bool {
        self.same(other) || (self.number && other.number)
    }
}

/// Finds loops in a text as it streams: push each delta; `push` returns the loop once one is
/// complete.
///
/// ```
/// use signet::module::check::repetition::{LoopDetector, LoopRule};
///
/// let mut detector = LoopDetector::new(LoopRule::default());
/// let mut found = None;
/// for delta in ["6.40 eur is 6.4", "0 eur is 6.40 eur ", "is 6.40 eur is"] {
///     found = found.or(detector.push(delta));
/// }
/// assert_eq!(found.map(|l| l.phrase), Some("6.40 eur is".to_string()));
/// ```
#[derive(Clone, Debug)]
pub struct LoopDetector {
    rule: LoopRule,
    /// The last completed words, at most `window`.
    words: VecDeque<Word>,
    window: usize,
    /// The word being written.
    current: String,
    current_start: usize,
    /// Bytes pushed so far.
    offset: usize,
    /// Whether a loop was reported.
    done: bool,
}

impl Default for LoopDetector {
    fn default() -> LoopDetector {
        LoopDetector::new(LoopRule::default())
    }
}

impl LoopDetector {
    /// A detector of loops by `rule`.
    ///
    /// ```
    /// use signet::module::check::repetition::{LoopDetector, LoopRule};
    ///
    /// let mut detector = LoopDetector::new(LoopRule::default());
    /// assert!(detector.push("Tomorrow in Oslo: 4 °C, light rain. ").is_none());
    /// ```
    pub fn new(rule: LoopRule) -> LoopDetector {
        let repeats = rule
            .min_repeats
            .max(2)
            .max(rule.pattern_repeats)
            .saturating_add(1);
        let window = rule.max_phrase_words.saturating_mul(repeats).max(
            rule.min_words
                .saturating_add(rule.max_phrase_words.saturating_mul(2)),
        );
        LoopDetector {
            rule,
            words: VecDeque::new(),
            window,
            current: String::new(),
            current_start: 0,
            offset: 0,
            done: false,
        }
    }

    /// Adds the next piece of the text; returns the loop when one completes with this piece. A
    /// loop is reported once: after it, pushes return `None` and cost nothing but the count of
    /// bytes.
    ///
    /// ```
    /// use signet::module::check::repetition::LoopDetector;
    ///
    /// let mut detector = LoopDetector::default();
    /// assert!(detector.push("120 EUR is 120 EUR is 120 EUR").is_none());
    /// assert!(detector.push(" is").is_none());
    /// let found = detector.push(" ").unwrap();
    /// assert_eq!(found.repeats, 3);
    /// ```
    pub fn push(&mut self, delta: &str) -> Option<Loop> {
        let base = self.offset;
        self.offset = self.offset.saturating_add(delta.len());
        if self.done {
            return None;
        }
        let mut run_start: Option<usize> = None;
        for (i, c) in delta.char_indices() {
            if c.is_whitespace() {
                if let Some(s) = run_start.take() {
                    self.current.push_str(delta.get(s..i).unwrap_or(""));
                }
                if !self.current.is_empty()
                    && let Some(found) = self.complete_word()
                {
                    self.done = true;
                    return Some(found);
                }
            } else if run_start.is_none() {
                run_start = Some(i);
                if self.current.is_empty() {
                    self.current_start = base + i;
                }
            }
        }
        if let Some(s) = run_start {
            self.current.push_str(delta.get(s..).unwrap_or(""));
        }
        None
    }

    /// Ends the text: the word being written is complete. Returns the loop this completes, if any.
    ///
    /// ```
    /// use signet::module::check::repetition::LoopDetector;
    ///
    /// let mut detector = LoopDetector::default();
    /// assert!(detector.push("180 days, 180 days, 180 days, 180 days, 180 days,").is_none());
    /// assert_eq!(detector.finish().map(|l| l.phrase), Some("180 days,".to_string()));
    /// ```
    pub fn finish(&mut self) -> Option<Loop> {
        if self.done || self.current.is_empty() {
            return None;
        }
        let found = self.complete_word();
        self.done = found.is_some();
        found
    }

    fn complete_word(&mut self) -> Option<Loop> {
        let text = std::mem::take(&mut self.current);
        self.words.push_back(Word::new(text, self.current_start));
        while self.words.len() > self.window {
            self.words.pop_front();
        }
        self.check()
    }

    /// The loop ending at the last word, if any.
    fn check(&self) -> Option<Loop> {
        let rule = self.rule;
        let n = self.words.len();
        let min_repeats = rule.min_repeats.max(2);
        let pattern_repeats = rule.pattern_repeats.max(min_repeats);
        for p in 1..=rule.max_phrase_words.min(n) {
            let last = n - p;
            if (last..n).all(|i| self.words.get(i).is_none_or(|w| w.number)) {
                continue;
            }
            let words_needed = rule.min_words.div_ceil(p);
            let need_exact = min_repeats.max(words_needed);
            let need_pattern = pattern_repeats.max(words_needed);
            let (mut exact, mut pattern, mut exact_run) = (1, 1, true);
            while exact < need_exact && pattern < need_pattern {
                let Some(block) = n.checked_sub(pattern.saturating_add(1).saturating_mul(p)) else {
                    break;
                };
                let (mut same, mut alike) = (true, true);
                for j in 0..p {
                    match (self.words.get(block + j), self.words.get(last + j)) {
                        (Some(a), Some(b)) if a.same(b) => {}
                        (Some(a), Some(b)) if a.alike(b) => same = false,
                        _ => {
                            alike = false;
                            break;
                        }
                    }
                }
                if !alike {
                    break;
                }
                pattern += 1;
                if exact_run && same {
                    exact += 1;
                } else {
                    exact_run = false;
                }
            }
            let is_exact = exact >= need_exact;
            if !is_exact && pattern < need_pattern {
                continue;
            }
            let repeats = if is_exact { exact } else { pattern };
            let mut start = n.saturating_sub(repeats.saturating_mul(p));
            while let Some(before) = start.checked_sub(1) {
                let matches = match (self.words.get(before), self.words.get(before + p)) {
                    (Some(a), Some(b)) => {
                        if is_exact {
                            a.same(b)
                        } else {
                            a.alike(b)
                        }
                    }
                    _ => false,
                };
                if !matches {
                    break;
                }
                start = before;
            }
            let phrase: Vec<&str> = self
                .words
                .iter()
                .skip(start)
                .take(p)
                .map(|w| w.text.as_str())
                .collect();
            return Some(Loop {
                phrase: phrase.join(" "),
                repeats: (n - start) / p,
                start: self.words.get(start).map_or(0, |w| w.start),
            });
        }
        None
    }
}

/// The loop of a whole text, as a [`LoopDetector`] fed the text (and then told it ended) finds it.
///
/// ```
/// use signet::module::check::repetition::{find_loop, LoopRule};
///
/// let reply = "Tomorrow in Bergen: €80,00 is 120 EUR is 120 EUR is 120 EUR is 120 EUR";
/// let found = find_loop(reply, LoopRule::default()).unwrap();
/// assert_eq!((found.phrase.as_str(), found.repeats), ("is 120 EUR", 3));
/// assert!(find_loop("very very very", LoopRule::default()).is_none());
/// ```
pub fn find_loop(text: &str, rule: LoopRule) -> Option<Loop> {
    let mut detector = LoopDetector::new(rule);
    detector.push(text).or_else(|| detector.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const BERGEN: &str =
        "Tomorrow in Bergen: €80,00 is 120 EUR is 120 EUR is 120 EUR is 120 EUR is 120 EUR";
    const KRISTIANSAND: &str =
        "Tomorrow in Kristiansand: 6.40 eur is 6.40 eur is 6.40 eur is 6.40 eur is";
    const TRONDHEIM: &str = "Budget 3,000 EUR is 3,000 EUR. Weather in Trondheim tommorow is 3,000 EUR. Weather in Trondheim tommorow is 3,000 EUR. Weather in Trondheim tommorow is 3,000 EUR.";
    const LEAP_YEAR: &str =
        "In kroner: 1 leap year is 180 days, 180 days, 180 days, 180 days, 180 days,";
    const COUNTING: &str = "Convert 75 EUR to NOK. In kroner: 75 EUR is 100 EUR is 150 EUR is 200 EUR is 250 EUR is 300 EUR is";

    const PROSE: &str = "The old harbour of Bergen wakes slowly on winter mornings. Fishermen \
        carry crates along the wharf while the first trams rattle past the fish market, and the \
        smell of coffee drifts from the small bakeries that open before dawn. Visitors often \
        arrive expecting rain, and they are rarely disappointed, yet the light that breaks \
        through the clouds over the seven mountains can be startling. A short ride on the \
        funicular brings you above the rooftops, where the city spreads out like a map of \
        wooden houses, church spires and narrow lanes. In the afternoon the museums fill with \
        school groups, and the guides tell stories of merchants who traded dried cod for grain \
        across the North Sea for centuries. Evening brings a different mood: musicians play in \
        the cellars of Bryggen, students gather in cheap cafés, and the ferries to the fjords \
        leave with their decks almost empty. If you plan to stay longer, consider renting a \
        bicycle, although the hills are steep and the cobblestones slippery after a shower. \
        Pack a warm sweater, waterproof boots and patience, because the weather changes its \
        mind several times a day. Most travellers agree that the reward is worth the effort, \
        and many return the following summer to walk the trails above the city, to swim in the \
        cold clear lakes, and to watch the sun refuse to set until well after midnight.";

    fn found(text: &str) -> Loop {
        find_loop(text, LoopRule::default()).unwrap_or_else(|| panic!("no loop in {text:?}"))
    }

    #[test]
    fn a_repeated_amount_sentence_is_a_loop() {
        let l = found(BERGEN);
        assert_eq!((l.phrase.as_str(), l.repeats), ("is 120 EUR", 3));
        assert_eq!(
            BERGEN.get(l.start..).map(|s| s.starts_with("is 120")),
            Some(true)
        );
    }

    #[test]
    fn a_loop_with_decimals_in_lower_case_is_found() {
        let l = found(KRISTIANSAND);
        assert_eq!((l.phrase.as_str(), l.repeats), ("6.40 eur is", 3));
        assert_eq!(l.start, KRISTIANSAND.find("6.40").unwrap_or(usize::MAX));
    }

    #[test]
    fn a_repeated_sentence_of_seven_words_is_a_loop() {
        let l = found(TRONDHEIM);
        assert_eq!(
            (l.phrase.as_str(), l.repeats),
            ("is 3,000 EUR. Weather in Trondheim tommorow", 3)
        );
        assert_eq!(l.start, TRONDHEIM.find("is 3,000").unwrap_or(usize::MAX));
    }

    #[test]
    fn a_two_word_phrase_needs_five_copies_to_reach_nine_words() {
        let l = found(LEAP_YEAR);
        assert_eq!((l.phrase.as_str(), l.repeats), ("180 days,", 5));
        let four = "In kroner: 1 leap year is 180 days, 180 days, 180 days, 180 days,";
        assert!(find_loop(four, LoopRule::default()).is_none());
    }

    #[test]
    fn a_pattern_with_changing_numbers_is_a_loop_after_five_copies() {
        let l = found(COUNTING);
        assert_eq!((l.phrase.as_str(), l.repeats), ("75 EUR is", 5));
        assert_eq!(
            l.start,
            COUNTING.find("75 EUR is 100").unwrap_or(usize::MAX)
        );
    }

    #[test]
    fn a_short_list_of_like_items_is_not_a_loop() {
        let forecast = "Day 1: 4 °C. Day 2: 5 °C. Day 3: 3 °C. Then snow.";
        assert!(find_loop(forecast, LoopRule::default()).is_none());
    }

    #[test]
    fn normal_answers_prose_and_lists_are_not_loops() {
        for text in [
            "Tomorrow in Oslo: 4 °C, light rain. In kroner: 200 EUR is 2340.00 NOK.",
            PROSE,
            "Oslo, Bergen, Tromsø, Lillehammer, Stavanger, Trondheim, Bodø, Ålesund, Kristiansand, Narvik, Hammerfest",
            "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12",
            "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            "very very very",
            "",
            "   ",
        ] {
            assert_eq!(find_loop(text, LoopRule::default()), None, "{text:?}");
        }
        assert!(PROSE.split_whitespace().count() >= 200);
    }

    #[test]
    fn words_compare_without_case_and_surrounding_punctuation() {
        let l = found("Is 120 eur, is 120 EUR. is (120) Eur! ");
        assert_eq!(l.repeats, 3);
        assert_eq!(l.phrase, "Is 120 eur,");
    }

    #[test]
    fn a_single_word_repeated_nine_times_is_a_loop() {
        let l = found("no no no no no no no no no ");
        assert_eq!((l.phrase.as_str(), l.repeats), ("no", 9));
        assert!(find_loop("no no no no no no no no ", LoopRule::default()).is_none());
    }

    fn chunks(text: &str, size: usize) -> Vec<&str> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let mut end = (start + size).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            out.push(text.get(start..end).unwrap_or(""));
            start = end;
        }
        out
    }

    fn streamed(text: &str, size: usize) -> Option<Loop> {
        let mut detector = LoopDetector::default();
        for delta in chunks(text, size) {
            if let Some(found) = detector.push(delta) {
                return Some(found);
            }
        }
        detector.finish()
    }

    #[test]
    fn streaming_in_any_chunks_finds_the_same_loop_as_the_whole_text() {
        for text in [BERGEN, KRISTIANSAND, TRONDHEIM, LEAP_YEAR, COUNTING, PROSE] {
            let whole = find_loop(text, LoopRule::default());
            for size in [1, 3, 7, 4096] {
                assert_eq!(streamed(text, size), whole, "{text:?} in chunks of {size}");
            }
        }
    }

    #[test]
    fn a_loop_is_reported_once() {
        let mut detector = LoopDetector::default();
        assert!(detector.push(&"again ".repeat(9)).is_some());
        assert!(detector.push("again again ").is_none());
        assert!(detector.finish().is_none());
    }

    #[test]
    fn sixteen_mebibytes_of_one_word_stop_early_and_fast() {
        let text = "again ".repeat((16 << 20) / 6);
        let started = Instant::now();
        let mut detector = LoopDetector::default();
        let mut found_at = None;
        for (i, delta) in chunks(&text, 4096).into_iter().enumerate() {
            if let Some(found) = detector.push(delta) {
                found_at = Some((i, found));
                break;
            }
        }
        let (index, found) = found_at.unwrap_or_else(|| panic!("no loop"));
        assert_eq!(index, 0);
        assert_eq!(
            (found.phrase.as_str(), found.repeats, found.start),
            ("again", 9, 0)
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn four_mebibytes_of_prose_stream_in_linear_time() {
        let text = format!("{PROSE} ").repeat((4 << 20) / (PROSE.len() + 1));
        let started = Instant::now();
        let mut detector = LoopDetector::default();
        // The prose repeated is a loop of a long phrase only if it fits the rule: it does not.
        for delta in chunks(&text, 4096) {
            assert!(detector.push(delta).is_none());
        }
        assert!(detector.finish().is_none());
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn a_mebibyte_without_whitespace_is_one_word() {
        let text = "x".repeat(1 << 20);
        let started = Instant::now();
        assert!(find_loop(&text, LoopRule::default()).is_none());
        let mut detector = LoopDetector::default();
        for delta in chunks(&text, 4096) {
            assert!(detector.push(delta).is_none());
        }
        assert!(detector.finish().is_none());
        let huge_words = format!("{text} ").repeat(9);
        assert_eq!(
            find_loop(&huge_words, LoopRule::default()).map(|l| l.repeats),
            Some(9)
        );
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn a_rule_can_ask_for_more_or_fewer_repeats() {
        let strict = LoopRule {
            min_repeats: 4,
            ..LoopRule::default()
        };
        assert_eq!(find_loop(BERGEN, strict).map(|l| l.repeats), Some(4));
        let lenient = LoopRule {
            min_words: 3,
            ..LoopRule::default()
        };
        assert_eq!(
            find_loop("very very very ", lenient).map(|l| l.phrase),
            Some("very".to_string())
        );
        let none = LoopRule {
            max_phrase_words: 0,
            ..LoopRule::default()
        };
        assert!(find_loop(BERGEN, none).is_none());
    }
}
