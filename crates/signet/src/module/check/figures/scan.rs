//! Reading figures: the scan over a text, numbers with their separators, signs, units, dates
//! and times.

use std::cell::Cell;
use std::ops::Range;

use super::*;

/// The text being read, which records whether a reading looked past its end.
pub(super) struct Cursor<'a> {
    text: &'a str,
    hit_end: Cell<bool>,
}

impl<'a> Cursor<'a> {
    /// The character at byte `pos`; `None` (and noted) at or past the end.
    pub(super) fn at(&self, pos: usize) -> Option<char> {
        let c = self.text.get(pos..).and_then(|s| s.chars().next());
        if c.is_none() {
            self.hit_end.set(true);
        }
        c
    }

    /// The character ending at byte `pos`.
    pub(super) fn before(&self, pos: usize) -> Option<char> {
        self.text.get(..pos).and_then(|s| s.chars().next_back())
    }

    fn digit_at(&self, pos: usize) -> bool {
        self.at(pos).is_some_and(|c| c.is_ascii_digit())
    }

    /// Where the run of ASCII digits from `pos` ends.
    fn digits_end(&self, mut pos: usize) -> usize {
        while self.digit_at(pos) {
            pos += 1;
        }
        pos
    }

    /// The end and length of the run of ASCII digits from `start`, reading at most `max + 1`
    /// digits (a length over `max` means "too long").
    fn digits_upto(&self, start: usize, max: usize) -> (usize, usize) {
        let mut pos = start;
        while pos - start <= max && self.digit_at(pos) {
            pos += 1;
        }
        (pos, pos - start)
    }

    fn slice(&self, range: Range<usize>) -> &'a str {
        self.text.get(range).unwrap_or("")
    }
}

const SPACES: [char; 3] = [' ', '\u{a0}', '\u{202f}'];

fn is_space(c: char) -> bool {
    SPACES.contains(&c)
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn is_letter(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn alias_char_matches(alias: Option<char>, text: char) -> bool {
    match alias {
        Some(' ') => is_space(text),
        Some(a) => a == text,
        None => false,
    }
}

/// Where `alias` ends when written at `pos` (ending a word when its last character is a letter or
/// digit).
pub(super) fn match_forward(cur: &Cursor<'_>, pos: usize, alias: &Alias) -> Option<usize> {
    let mut p = pos;
    let mut k = 0;
    while k < alias.chars.len() {
        let c = cur.at(p)?;
        p += c.len_utf8();
        if alias.case_sensitive {
            if !alias_char_matches(alias.chars.get(k).copied(), c) {
                return None;
            }
            k += 1;
        } else {
            for lower in c.to_lowercase() {
                if !alias_char_matches(alias.chars.get(k).copied(), lower) {
                    return None;
                }
                k += 1;
            }
        }
    }
    if alias.chars.last().is_some_and(|c| c.is_alphanumeric()) && cur.at(p).is_some_and(is_word) {
        return None;
    }
    Some(p)
}

/// Where `alias` starts when written right before `pos` (starting a word when its first character
/// is a letter or digit).
pub(super) fn match_backward(cur: &Cursor<'_>, pos: usize, alias: &Alias) -> Option<usize> {
    let mut p = pos;
    let mut k = alias.chars.len();
    while k > 0 {
        let c = cur.before(p)?;
        p -= c.len_utf8();
        if alias.case_sensitive {
            k -= 1;
            if !alias_char_matches(alias.chars.get(k).copied(), c) {
                return None;
            }
        } else {
            for lower in c.to_lowercase().rev() {
                if k == 0 {
                    return None;
                }
                k -= 1;
                if !alias_char_matches(alias.chars.get(k).copied(), lower) {
                    return None;
                }
            }
        }
    }
    if alias.chars.first().is_some_and(|c| c.is_alphanumeric())
        && cur.before(p).is_some_and(is_word)
    {
        return None;
    }
    Some(p)
}

/// Punctuation that joins the parts of a word such as a URL or identifier when a letter or digit
/// follows it.
const JOINERS: &[char] = &[
    '.', ',', '-', '−', '/', ':', '\'', '’', '@', '#', '?', '=', '&', '+', '%', '~',
];

/// Where the word (letters, digits and joining punctuation) through `pos` ends.
fn skip_word(cur: &Cursor<'_>, mut pos: usize) -> usize {
    while let Some(c) = cur.at(pos) {
        let next = pos + c.len_utf8();
        if is_word(c) || (JOINERS.contains(&c) && cur.at(next).is_some_and(is_word)) {
            pos = next;
        } else {
            break;
        }
    }
    pos
}

enum Step {
    Figure(Figure),
    Skip(usize),
}

pub(super) fn scan(text: &str, units: &Units, settled_only: bool) -> Vec<Figure> {
    let cur = Cursor {
        text,
        hit_end: Cell::new(false),
    };
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(c) = text.get(i..).and_then(|s| s.chars().next()) {
        if !c.is_ascii_digit() {
            i += c.len_utf8();
            continue;
        }
        let step = read_at(&cur, units, i);
        if settled_only && cur.hit_end.get() {
            break;
        }
        match step {
            Step::Figure(figure) => {
                i = figure.span.end.max(i + 1);
                out.push(figure);
            }
            Step::Skip(end) => i = end.max(i + 1),
        }
    }
    out
}

/// Reads what starts at the digit at byte `d`.
fn read_at(cur: &Cursor<'_>, units: &Units, d: usize) -> Step {
    let prev = cur.before(d);
    if let Some(p) = prev {
        let glued = p.is_ascii_digit()
            || (is_letter(p) && units.currency_before(cur, d).is_none())
            || (matches!(p, '-' | '−' | '.' | '/')
                && cur
                    .before(d.saturating_sub(p.len_utf8()))
                    .is_some_and(is_letter));
        if glued {
            return Step::Skip(skip_word(cur, d));
        }
    }
    if let Some(figure) = date_at(cur, d).or_else(|| time_at(cur, d)) {
        return Step::Figure(figure);
    }
    let cont = match prev {
        Some(p @ (',' | '.'))
            if cur
                .before(d.saturating_sub(1))
                .is_some_and(|c| c.is_ascii_digit()) =>
        {
            sep_of(p)
        }
        _ => None,
    };
    let number = parse_number(cur, d, cont);
    if number.digits > MAX_DIGITS {
        return Step::Skip(skip_word(cur, number.end));
    }

    let mut end = number.end;
    let mut unit = None;
    if let Some((u, e)) = units.after(cur, end) {
        unit = Some(u);
        end = e;
    } else {
        match cur.at(end) {
            Some(c) if is_space(c) => {
                if let Some((u, e)) = units.after(cur, end + c.len_utf8()) {
                    unit = Some(u);
                    end = e;
                }
            }
            Some(c) if is_word(c) => return Step::Skip(skip_word(cur, end)),
            _ => {}
        }
    }

    let mut start = d;
    let mut negative = false;
    let mut sign_start = sign_before(cur, d);
    if let Some((s, minus)) = sign_start {
        negative = minus;
        start = s;
    }
    if unit.is_none() {
        let q = start;
        let found = units.currency_before(cur, q).or_else(|| {
            let space = cur.before(q).filter(|c| is_space(*c))?;
            units.currency_before(cur, q - space.len_utf8())
        });
        if let Some((u, s)) = found {
            unit = Some(u);
            start = s;
            if sign_start.is_none()
                && let Some((s2, minus)) = sign_before(cur, s)
            {
                sign_start = Some((s2, minus));
                negative = minus;
                start = s2;
            }
        }
    }
    if sign_start.is_none()
        && let Some(space) = cur.before(start).filter(|c| is_space(*c))
    {
        let q = start - space.len_utf8();
        if let Some(word_start) = q.checked_sub(5)
            && cur
                .text
                .get(word_start..q)
                .is_some_and(|w| w.eq_ignore_ascii_case("minus"))
            && !cur.before(word_start).is_some_and(is_word)
        {
            negative = true;
            start = word_start;
        }
    }

    let mut digits = number.int;
    if !number.frac.is_empty() {
        digits.push('.');
        digits.push_str(&number.frac);
    }
    let Ok(value) = digits.parse::<f64>() else {
        return Step::Skip(skip_word(cur, number.end));
    };
    Step::Figure(Figure {
        value: if negative { -value } else { value },
        decimals: u32::try_from(number.frac.len()).unwrap_or(u32::MAX),
        unit,
        text: cur.slice(start..end).to_string(),
        span: start..end,
        kind: FigureKind::Number,
    })
}

/// A sign written right before `pos` (not after a letter or digit): where it starts and whether it
/// is a minus.
fn sign_before(cur: &Cursor<'_>, pos: usize) -> Option<(usize, bool)> {
    let c = cur.before(pos).filter(|c| matches!(c, '-' | '−' | '+'))?;
    let start = pos - c.len_utf8();
    if cur.before(start).is_some_and(is_word) {
        return None;
    }
    Some((start, c != '+'))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sep {
    Space,
    Apostrophe,
    Comma,
    Dot,
}

fn sep_of(c: char) -> Option<Sep> {
    match c {
        ' ' | '\u{a0}' | '\u{202f}' => Some(Sep::Space),
        '\'' | '’' => Some(Sep::Apostrophe),
        ',' => Some(Sep::Comma),
        '.' => Some(Sep::Dot),
        _ => None,
    }
}

/// A number's digits as read.
struct Number {
    /// The integer digits (without separators), kept only up to [`MAX_DIGITS`].
    int: String,
    /// The decimal digits.
    frac: String,
    /// Where the number ends.
    end: usize,
    /// How many digits it has.
    digits: usize,
}

/// Reads the number whose first digit is at `d`; `cont` is the separator that ended the number
/// before it, which this one may not use.
fn parse_number(cur: &Cursor<'_>, d: usize, cont: Option<Sep>) -> Number {
    let first_end = cur.digits_end(d);
    let first_len = first_end - d;
    let mut number = Number {
        int: String::new(),
        frac: String::new(),
        end: first_end,
        digits: first_len,
    };
    if first_len <= MAX_DIGITS {
        number.int.push_str(cur.slice(d..first_end));
    }
    let mut grouping: Option<Sep> = None;
    // Whether the separator `sep` (a comma or dot) followed by a digit is at `pos`.
    let sep_digit_at =
        |pos: usize, sep: Sep| cur.at(pos).and_then(sep_of) == Some(sep) && cur.digit_at(pos + 1);
    loop {
        let p = number.end;
        let Some(c) = cur.at(p) else { break };
        let Some(sep) = sep_of(c) else { break };
        if Some(sep) == cont {
            break;
        }
        let q = p + c.len_utf8();
        if !cur.digit_at(q) {
            break;
        }
        let group_end = cur.digits_end(q);
        let n = group_end - q;
        let groupable = first_len <= 3 && n == 3 && grouping.is_none_or(|g| g == sep);
        let thousands = match sep {
            Sep::Space | Sep::Apostrophe => groupable,
            Sep::Comma | Sep::Dot => {
                let other = if sep == Sep::Comma {
                    Sep::Dot
                } else {
                    Sep::Comma
                };
                let same_follows = sep_digit_at(group_end, sep);
                let thousands = groupable
                    && (sep == Sep::Comma
                        || same_follows
                        || sep_digit_at(group_end, other)
                        || grouping == Some(Sep::Dot));
                if !thousands {
                    let decimal = !same_follows
                        && grouping != Some(sep)
                        && (sep == Sep::Dot || n <= 2 || grouping.is_some());
                    if decimal {
                        number.frac = cur
                            .slice(q..group_end)
                            .chars()
                            .take(MAX_DIGITS + 1)
                            .collect();
                        number.digits = number.digits.saturating_add(n);
                        number.end = group_end;
                    }
                    break;
                }
                true
            }
        };
        if !thousands {
            break;
        }
        grouping = Some(sep);
        number.digits = number.digits.saturating_add(n);
        if number.digits <= MAX_DIGITS {
            number.int.push_str(cur.slice(q..group_end));
        }
        number.end = group_end;
    }
    number
}

/// A date whose first digit is at `d`.
fn date_at(cur: &Cursor<'_>, d: usize) -> Option<Figure> {
    let (e0, n0) = cur.digits_upto(d, 4);
    if !(n0 == 4 || (1..=2).contains(&n0)) {
        return None;
    }
    let sep = cur.at(e0)?;
    if !matches!(sep, '-' | '/' | '.') {
        return None;
    }
    let (e1, n1) = cur.digits_upto(e0 + 1, 2);
    if !(1..=2).contains(&n1) || cur.at(e1)? != sep {
        return None;
    }
    let (e2, n2) = cur.digits_upto(e1 + 1, 4);
    let number = |r: Range<usize>| small_number(cur.slice(r));
    let (a, b, c) = (number(d..e0)?, number(e0 + 1..e1)?, number(e1 + 1..e2)?);
    let (year, month, day) = if n0 == 4 {
        if !(1..=2).contains(&n2) {
            return None;
        }
        (a, b, c)
    } else {
        if n2 != 4 {
            return None;
        }
        if sep == '/' && a <= 12 && b > 12 {
            (c, a, b)
        } else {
            (c, b, a)
        }
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    Some(Figure {
        value: f64::from(year) * 10_000.0 + f64::from(month) * 100.0 + f64::from(day),
        decimals: 0,
        unit: None,
        text: cur.slice(d..e2).to_string(),
        span: d..e2,
        kind: FigureKind::Date,
    })
}

/// A time of day whose first digit is at `d`.
fn time_at(cur: &Cursor<'_>, d: usize) -> Option<Figure> {
    let (e0, n0) = cur.digits_upto(d, 2);
    if !(1..=2).contains(&n0) || cur.at(e0)? != ':' {
        return None;
    }
    let (e1, n1) = cur.digits_upto(e0 + 1, 2);
    if n1 != 2 {
        return None;
    }
    let number = |r: Range<usize>| small_number(cur.slice(r));
    let (hours, minutes) = (number(d..e0)?, number(e0 + 1..e1)?);
    if hours > 24 || minutes > 59 {
        return None;
    }
    let mut end = e1;
    let mut seconds = 0.0;
    let mut decimals = 0;
    if cur.at(e1) == Some(':') {
        let (e2, n2) = cur.digits_upto(e1 + 1, 2);
        if let Some(s) = number(e1 + 1..e2).filter(|s| n2 == 2 && *s <= 60) {
            end = e2;
            seconds = f64::from(s);
            if cur.at(e2) == Some('.') && cur.digit_at(e2 + 1) {
                let e3 = cur.digits_end(e2 + 1);
                let leading: String = cur.slice(e2 + 1..e3).chars().take(15).collect();
                seconds += format!("0.{leading}").parse::<f64>().unwrap_or(0.0);
                decimals = u32::try_from(e3 - e2 - 1).unwrap_or(u32::MAX);
                end = e3;
            }
        }
    }
    Some(Figure {
        value: f64::from(hours) * 3600.0 + f64::from(minutes) * 60.0 + seconds,
        decimals,
        unit: None,
        text: cur.slice(d..end).to_string(),
        span: d..end,
        kind: FigureKind::Time,
    })
}
