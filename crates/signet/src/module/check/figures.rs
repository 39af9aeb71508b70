//! Figures read from text: numbers, each with its unit when one is written beside it, and dates
//! and times — what the [grounding check](super::Grounded) compares between an answer and its
//! sources. The rules are its precision and its limits:
//!
//! - **Where a number starts.** Digits preceded by a letter, a digit, `.` or `,` do not start a
//!   figure (`H2O`, `SmolLM2`, `v1.2`); digits followed by letters that are not a unit are not a
//!   figure either (`2nd`, `3D`, `4K`), nor is a run of more than 64 digits and separators (no
//!   quantity a reader means).
//! - **Separators.** `1,234`, `1,234,567`, `1'234`, `1.234.567` and `1 234` (a space, U+00A0 or
//!   U+202F between groups of exactly three digits) are thousands. With both `.` and `,` in one
//!   number the last is the decimal separator (`1.234,56` and `1,234.56` are 1234.56). A lone `.`
//!   is a decimal point (`1.234` is 1.234); a lone `,` followed by one or two digits is a decimal
//!   comma (`€80,00` is 80.00). A number whose separators fit none of these (`1.2.3`, `1,2345`) is
//!   not read. A `.` or `,` after the last digit is punctuation.
//! - **Signs.** `-` or `−` (U+2212) right before the digits is a minus sign unless a letter or
//!   digit comes before it (`2022-01` is not -01); `minus 3` is -3.
//! - **Units.** An alias right after the number, or after one space (`200 EUR`, `200 euros`,
//!   `2 340 kroner`, `-3 °C`, `-3°C`, `3 degrees`, `15%`, `12 km/h`), or a currency before it
//!   (`€200`, `EUR 200`, `NOK 2340`, `$5`, `kr 50`); the unit after the number wins. Aliases are
//!   matched case-insensitively, the longest first, on word boundaries (`3 m` is metres, `3 men`
//!   is not). Bare "degrees" is °C. [`Units::default`] lists the built-in aliases;
//!   [`Units::with_alias`] adds yours.
//! - **Dates and times.** `2026-11-28`, `28.11.2026`, `28/11/2026`, `22:30` and `22:30:05` are
//!   one figure each ([`FigureKind::Date`], [`FigureKind::Time`]), compared by their digits.
//! - **Not read.** Numbers spelled out ("two hundred"), scale words ("1.2 million" is 1.2),
//!   fractions written with a slash other than dates, ordinals, roman numerals.
//!
//! ```
//! use signet::module::check::figures::{Units, figures};
//! let said = figures("Tomorrow in Oslo: 4 °C. In kroner: 200 EUR is 2,340.00 NOK.", &Units::default());
//! let read: Vec<(f64, Option<&str>)> = said.iter().map(|f| (f.value, f.unit.as_ref().map(|u| u.as_str()))).collect();
//! assert_eq!(read, [(4.0, Some("°C")), (200.0, Some("EUR")), (2340.0, Some("NOK"))]);
//! ```

use std::borrow::Cow;
use std::ops::Range;

/// A unit as figures are compared: its canonical name (`EUR`, `NOK`, `°C`, `%`, `km`, ..).
///
/// ```
/// use signet::module::check::figures::Unit;
/// assert_eq!(Unit::new("NOK").as_str(), "NOK");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unit(Cow<'static, str>);

impl Unit {
    /// The unit called `name`.
    pub fn new(name: impl Into<Cow<'static, str>>) -> Unit {
        Unit(name.into())
    }

    /// Its canonical name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The words and symbols read as units, each with its unit. [`Units::default`] is the built-in
/// table (currencies, temperatures, percent, lengths, weights, volumes, times, speeds).
///
/// ```
/// use signet::module::check::figures::{Units, figures};
/// let units = Units::default().with_alias("kronor", "SEK");
/// assert_eq!(figures("50 kronor", &units)[0].unit.as_ref().unwrap().as_str(), "SEK");
/// assert!(figures("50 EUR", &Units::none())[0].unit.is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Units {
    /// `(alias in lower case, unit, whether it may stand before the number)`, longest first.
    aliases: Vec<(String, Unit, bool)>,
}

/// The built-in aliases: `(alias, unit, may stand before the number)`.
const BUILT_IN: &[(&str, &str, bool)] = &[
    ("€", "EUR", true),
    ("eur", "EUR", true),
    ("euro", "EUR", false),
    ("euros", "EUR", false),
    ("nok", "NOK", true),
    ("kr", "NOK", true),
    ("kr.", "NOK", true),
    ("krone", "NOK", false),
    ("kroner", "NOK", false),
    ("norwegian kroner", "NOK", false),
    ("$", "USD", true),
    ("usd", "USD", true),
    ("us$", "USD", true),
    ("dollar", "USD", false),
    ("dollars", "USD", false),
    ("£", "GBP", true),
    ("gbp", "GBP", true),
    ("pound", "GBP", false),
    ("pounds", "GBP", false),
    ("sek", "SEK", true),
    ("dkk", "DKK", true),
    ("chf", "CHF", true),
    ("jpy", "JPY", true),
    ("¥", "JPY", true),
    ("yen", "JPY", false),
    ("°c", "°C", false),
    ("℃", "°C", false),
    ("°", "°C", false),
    ("degree", "°C", false),
    ("degrees", "°C", false),
    ("degree c", "°C", false),
    ("degrees c", "°C", false),
    ("degree celsius", "°C", false),
    ("degrees celsius", "°C", false),
    ("celsius", "°C", false),
    ("°f", "°F", false),
    ("℉", "°F", false),
    ("degrees f", "°F", false),
    ("degrees fahrenheit", "°F", false),
    ("fahrenheit", "°F", false),
    ("%", "%", false),
    ("percent", "%", false),
    ("per cent", "%", false),
    ("km", "km", false),
    ("kilometres", "km", false),
    ("kilometers", "km", false),
    ("m", "m", false),
    ("metres", "m", false),
    ("meters", "m", false),
    ("cm", "cm", false),
    ("mm", "mm", false),
    ("kg", "kg", false),
    ("g", "g", false),
    ("l", "l", false),
    ("litres", "l", false),
    ("liters", "l", false),
    ("ml", "ml", false),
    ("h", "h", false),
    ("hours", "h", false),
    ("hour", "h", false),
    ("min", "min", false),
    ("minutes", "min", false),
    ("s", "s", false),
    ("seconds", "s", false),
    ("km/h", "km/h", false),
    ("mph", "mph", false),
    ("m/s", "m/s", false),
];

impl Default for Units {
    fn default() -> Units {
        let mut units = Units::none();
        for (alias, unit, before) in BUILT_IN {
            units.push(alias, Unit::new(*unit), *before);
        }
        units
    }
}

impl Units {
    /// No units: every figure is read without one.
    pub fn none() -> Units {
        Units {
            aliases: Vec::new(),
        }
    }

    /// These units and `alias` (matched case-insensitively after the number) read as `unit`.
    pub fn with_alias(mut self, alias: &str, unit: &str) -> Units {
        self.push(alias, Unit::new(unit.to_owned()), false);
        self
    }

    fn push(&mut self, alias: &str, unit: Unit, before: bool) {
        let alias = alias.to_lowercase();
        if alias.is_empty() {
            return;
        }
        self.aliases.retain(|(a, ..)| *a != alias);
        let at = self
            .aliases
            .iter()
            .position(|(a, ..)| a.len() < alias.len())
            .unwrap_or(self.aliases.len());
        self.aliases.insert(at, (alias, unit, before));
    }

    /// The longest alias in bytes.
    fn longest(&self) -> usize {
        self.aliases.first().map_or(0, |(a, ..)| a.len())
    }

    /// The unit whose alias `text` starts with (on a word boundary), and the alias's length.
    fn after(&self, text: &str) -> Option<(Unit, usize)> {
        self.aliases.iter().find_map(|(alias, unit, _)| {
            let head = text.get(..alias.len())?;
            if !head.eq_ignore_ascii_case(alias) && head.to_lowercase() != *alias {
                return None;
            }
            let ends_in_word = alias.chars().last().is_some_and(char::is_alphanumeric);
            let next = text[alias.len()..].chars().next();
            if ends_in_word && next.is_some_and(|c| c.is_alphanumeric()) {
                return None;
            }
            Some((unit.clone(), alias.len()))
        })
    }

    /// The currency whose alias `text` ends with (on a word boundary), and the alias's length.
    fn before(&self, text: &str) -> Option<(Unit, usize)> {
        self.aliases
            .iter()
            .filter(|(_, _, before)| *before)
            .find_map(|(alias, unit, _)| {
                let start = text.len().checked_sub(alias.len())?;
                let tail = text.get(start..)?;
                if !tail.eq_ignore_ascii_case(alias) && tail.to_lowercase() != *alias {
                    return None;
                }
                let starts_in_word = alias.chars().next().is_some_and(char::is_alphanumeric);
                let previous = text[..start].chars().next_back();
                if starts_in_word && previous.is_some_and(|c| c.is_alphanumeric()) {
                    return None;
                }
                Some((unit.clone(), alias.len()))
            })
    }
}

/// What a figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FigureKind {
    /// A number (with or without a unit).
    Number,
    /// A date, compared by its digits.
    Date,
    /// A time of day, compared by its digits.
    Time,
}

/// One figure of a text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Figure {
    /// The number, negative when signed (a date's or time's digits as one number).
    pub value: f64,
    /// The decimals written ("2340.00": 2).
    pub decimals: u32,
    /// The unit written beside it.
    pub unit: Option<Unit>,
    /// As written, sign and unit included ("-3 °C", "1,250 EUR", "€80").
    pub text: String,
    /// Where `text` is in the text read (bytes).
    pub span: Range<usize>,
    /// A number, a date or a time.
    pub kind: FigureKind,
}

impl Figure {
    /// Whether this figure, said in an answer, states `source` (a figure of a tool result or the
    /// question): the same kind; units that agree where both name one; and the same value, or
    /// `source` rounded to the decimals written here ("1169" states 1168.83, "4.4" does not state
    /// 4). A date or a time states the same digits.
    ///
    /// ```
    /// use signet::module::check::figures::{Units, figures};
    /// let read = |t: &str| figures(t, &Units::default()).remove(0);
    /// assert!(read("1169 NOK").states(&read("1168.83 NOK")));
    /// assert!(read("2340 kroner").states(&read("2340.00 NOK")));
    /// assert!(!read("300 NOK").states(&read("300 EUR")));
    /// assert!(!read("4.4").states(&read("4")));
    /// assert!(!read("3 °C").states(&read("-3 °C")));
    /// ```
    pub fn states(&self, source: &Figure) -> bool {
        if self.kind != source.kind {
            return false;
        }
        if let (Some(mine), Some(theirs)) = (&self.unit, &source.unit)
            && mine != theirs
        {
            return false;
        }
        if (self.value - source.value).abs() < 1e-9 {
            return true;
        }
        if self.kind != FigureKind::Number || self.decimals >= source.decimals {
            return false;
        }
        let scale = 10f64.powi(self.decimals as i32);
        (self.value - (source.value * scale).round() / scale).abs() < 1e-9
    }
}

/// The longest run of digits and separators read as one number.
const MAX_NUMBER: usize = 64;

/// Every figure of `text`, in order.
///
/// ```
/// use signet::module::check::figures::{FigureKind, Units, figures};
/// let read = figures("Snow in Tromsø on 2026-11-29, minus 3 degrees; €80,00 is 936 kr.", &Units::default());
/// assert_eq!(read[0].kind, FigureKind::Date);
/// assert_eq!((read[1].value, read[1].text.as_str()), (-3.0, "minus 3 degrees"));
/// assert_eq!((read[2].value, read[2].decimals, read[2].text.as_str()), (80.0, 2, "€80,00"));
/// assert_eq!(read[3].unit.as_ref().unwrap().as_str(), "NOK");
/// ```
pub fn figures(text: &str, units: &Units) -> Vec<Figure> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut back = text[..i].chars().rev();
        let previous = back.next();
        let glued = previous.is_some_and(|c| c.is_alphanumeric() || c == '.' || c == ',')
            || (previous == Some('-') && back.next().is_some_and(char::is_alphanumeric));
        let token = match glued {
            true => None,
            false => read_at(text, i, units),
        };
        match token {
            Some(figure) => {
                i = figure.span.end.max(i + 1);
                found.push(figure);
            }
            // Skip the rest of this run of digits and separators.
            None => {
                i += 1;
                while i < bytes.len() && (bytes[i].is_ascii_digit() || b".,'".contains(&bytes[i])) {
                    i += 1;
                }
            }
        }
    }
    found
}

/// The figures of `text`, a reply still being written, that no text that may follow can change:
/// their digits, sign and unit are settled (the text goes on long enough after them, or with
/// punctuation that ends them).
///
/// ```
/// use signet::module::check::figures::{Units, settled_figures};
/// let units = Units::default();
/// let texts = |t: &str| settled_figures(t, &units).into_iter().map(|f| f.text).collect::<Vec<_>>();
/// assert_eq!(texts("300 EUR is 3"), ["300 EUR"]);
/// assert!(texts("It is 4").is_empty());
/// assert_eq!(texts("Tomorrow in Oslo: 4 °C, light"), ["4 °C"]);
/// ```
pub fn settled_figures(text: &str, units: &Units) -> Vec<Figure> {
    // Enough text after a figure to read any unit and a thousands group after it.
    let window = units.longest() + 8;
    figures(text, units)
        .into_iter()
        .filter(|figure| {
            let after = &text[figure.span.end..];
            after.len() >= window || ends_figure(after)
        })
        .collect()
}

/// Whether `after` (the text right after a figure) already ends it: punctuation no number or unit
/// continues with.
fn ends_figure(after: &str) -> bool {
    let mut chars = after.chars();
    match chars.next() {
        Some(';' | '!' | '?' | ')' | ']' | '}' | '"' | '\n' | '\r') => true,
        Some('.' | ',') => chars.next().is_some_and(char::is_whitespace),
        _ => false,
    }
}

/// A date at the start of `text`: `2026-11-28`, `28.11.2026`, `28/11/2026`; its length.
fn date_at(text: &str) -> Option<usize> {
    let groups = digit_groups(text, |c| matches!(c, '-' | '.' | '/'), 3)?;
    let lengths: Vec<usize> = groups.iter().map(|(len, _)| *len).collect();
    let seps: Vec<char> = groups.iter().skip(1).filter_map(|(_, sep)| *sep).collect();
    let same_sep = seps.len() == 2 && seps[0] == seps[1];
    let iso = lengths[..] == [4, 2, 2] && seps.first() == Some(&'-');
    let day_first = matches!(lengths[..], [1 | 2, 1 | 2, 2 | 4]) && seps.first() != Some(&'-');
    (same_sep && (iso || day_first)).then(|| group_end(&groups))
}

/// A time at the start of `text`: `22:30`, `7:05`, `22:30:05`; its length.
fn time_at(text: &str) -> Option<usize> {
    let groups = digit_groups(text, |c| c == ':', 3)?;
    let lengths: Vec<usize> = groups.iter().map(|(len, _)| *len).collect();
    let fits = matches!(lengths[..], [1 | 2, 2] | [1 | 2, 2, 2]);
    (fits && groups.len() >= 2).then(|| group_end(&groups))
}

/// Up to `max` groups of digits at the start of `text` joined by a separator `is_sep` accepts:
/// each group's digit count and the separator before it. `None` when `text` has no digit first
/// or there is only one group.
fn digit_groups(
    text: &str,
    is_sep: impl Fn(char) -> bool,
    max: usize,
) -> Option<Vec<(usize, Option<char>)>> {
    let mut groups = Vec::new();
    let mut rest = text;
    let mut sep = None;
    while groups.len() < max {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            break;
        }
        groups.push((digits, sep));
        rest = &rest[digits..];
        match rest.chars().next() {
            Some(c)
                if is_sep(c) && rest[c.len_utf8()..].starts_with(|d: char| d.is_ascii_digit()) =>
            {
                sep = Some(c);
                rest = &rest[c.len_utf8()..];
            }
            _ => break,
        }
    }
    (groups.len() >= 2).then_some(groups)
}

/// The bytes the groups of [`digit_groups`] span.
fn group_end(groups: &[(usize, Option<char>)]) -> usize {
    groups
        .iter()
        .map(|(len, sep)| len + sep.map_or(0, char::len_utf8))
        .sum()
}

/// The figure starting at byte `start` (a digit), if one does.
fn read_at(text: &str, start: usize, units: &Units) -> Option<Figure> {
    let rest = &text[start..];
    if let Some(len) = date_at(rest) {
        return Some(whole(text, start, len, FigureKind::Date));
    }
    if let Some(len) = time_at(rest) {
        return Some(whole(text, start, len, FigureKind::Time));
    }
    let (len, value, decimals) = number_at(rest)?;
    let mut end = start + len;
    let after_number = &text[end..];
    if after_number.starts_with(|c: char| c.is_alphanumeric())
        && units.after(after_number).is_none()
    {
        // Digits glued to a word that is no unit ("2nd", "3D").
        return None;
    }
    // The unit after the number, right after it or after one space.
    let mut unit = None;
    let gap = after_number
        .chars()
        .next()
        .filter(|c| matches!(c, ' ' | '\u{a0}' | '\u{202f}'))
        .map_or(0, char::len_utf8);
    if let Some((found, alias)) = units
        .after(after_number)
        .or_else(|| units.after(&after_number[gap..]).map(|(u, a)| (u, a + gap)))
    {
        unit = Some(found);
        end += alias;
    }
    // A sign, "minus", or a currency before.
    let before = &text[..start];
    let mut begin = start;
    let mut negative = false;
    let signed = before
        .strip_suffix('-')
        .or_else(|| before.strip_suffix('−'))
        .filter(|rest| !rest.ends_with(|c: char| c.is_alphanumeric()));
    if let Some(rest) = signed {
        negative = true;
        begin = rest.len();
    }
    let spaced = text[..begin].trim_end_matches([' ', '\u{a0}', '\u{202f}']);
    if !negative {
        let minus = spaced.len().checked_sub(5).and_then(|at| spaced.get(at..));
        if let Some(word) = minus
            && word.eq_ignore_ascii_case("minus")
            && !spaced[..spaced.len() - 5].ends_with(|c: char| c.is_alphanumeric())
        {
            negative = true;
            begin = spaced.len() - 5;
        }
    }
    if unit.is_none() {
        // A currency right before the number, or before it and one space.
        let head = &text[..begin];
        let spaced = head.strip_suffix([' ', '\u{a0}', '\u{202f}']);
        for head in [Some(head), spaced].into_iter().flatten() {
            if let Some((found, alias)) = units.before(head) {
                unit = Some(found);
                begin = begin.min(head.len() - alias);
                break;
            }
        }
    }
    Some(Figure {
        value: if negative { -value } else { value },
        decimals,
        unit,
        text: text[begin..end].to_owned(),
        span: begin..end,
        kind: FigureKind::Number,
    })
}

/// A date or time of `len` bytes at `start`, its value its digits.
fn whole(text: &str, start: usize, len: usize, kind: FigureKind) -> Figure {
    let written = &text[start..start + len];
    let digits: String = written.chars().filter(char::is_ascii_digit).collect();
    Figure {
        value: digits.parse().unwrap_or(f64::NAN),
        decimals: 0,
        unit: None,
        text: written.to_owned(),
        span: start..start + len,
        kind,
    }
}

/// The number at the start of `text` (a digit): its length in bytes, value and decimals; `None`
/// when its separators fit no format or it is too long to be a quantity.
fn number_at(text: &str) -> Option<(usize, f64, u32)> {
    // Groups of digits and the separator before each.
    let mut groups: Vec<(Option<char>, &str)> = Vec::new();
    let mut at = 0;
    let mut sep = None;
    loop {
        let digits = text[at..].bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            break;
        }
        groups.push((sep, &text[at..at + digits]));
        at += digits;
        if at > MAX_NUMBER {
            return None;
        }
        let rest = &text[at..];
        let Some(c) = rest.chars().next() else { break };
        let after = &rest[c.len_utf8()..];
        let next_digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let separates = match c {
            '.' | ',' | '\'' => next_digits > 0,
            // A space separates thousands only: groups of exactly three digits after a first
            // group of at most three.
            ' ' | '\u{a0}' | '\u{202f}' => {
                next_digits == 3
                    && groups.iter().all(|(s, d)| {
                        if s.is_none() {
                            d.len() <= 3
                        } else {
                            d.len() == 3
                        }
                    })
            }
            _ => false,
        };
        if !separates {
            break;
        }
        sep = Some(c);
        at += c.len_utf8();
    }
    let (first, rest) = groups.split_first()?;
    let marks: Vec<char> = rest.iter().filter_map(|(s, _)| *s).collect();
    let count = |c: char| marks.iter().filter(|m| **m == c).count();
    // The decimal separator, if the number has one.
    let decimal = match (count('.'), count(',')) {
        (0, 0) => None,
        // Both: the last of them.
        (1.., 1..) => marks.iter().rev().find(|c| matches!(c, '.' | ',')).copied(),
        (1, 0) => Some('.'),
        // A lone comma: decimals with one or two digits after it, thousands with three.
        (0, 1) => rest
            .iter()
            .find(|(s, _)| *s == Some(','))
            .filter(|(_, d)| d.len() < 3)
            .map(|_| ','),
        _ => None,
    };
    if decimal.is_some_and(|d| count(d) > 1) {
        return None;
    }
    let mut integer = String::from(first.1);
    let mut fraction = "";
    for (i, (sep, digits)) in rest.iter().enumerate() {
        if decimal.is_some() && *sep == decimal {
            if i + 1 != rest.len() {
                return None;
            }
            fraction = digits;
        } else if digits.len() == 3 {
            integer.push_str(digits);
        } else {
            return None;
        }
    }
    let written = if fraction.is_empty() {
        integer
    } else {
        format!("{integer}.{fraction}")
    };
    let value: f64 = written.parse().ok()?;
    Some((at, value, fraction.len() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Vec<(f64, u32, Option<String>, String)> {
        figures(text, &Units::default())
            .into_iter()
            .map(|f| {
                (
                    f.value,
                    f.decimals,
                    f.unit.map(|u| u.0.into_owned()),
                    f.text,
                )
            })
            .collect()
    }

    fn values(text: &str) -> Vec<(f64, Option<String>)> {
        read(text).into_iter().map(|(v, _, u, _)| (v, u)).collect()
    }

    fn unit(u: &str) -> Option<String> {
        Some(u.to_owned())
    }

    #[test]
    fn an_answer_of_the_travel_agent_is_read_with_its_units() {
        assert_eq!(
            values("Tomorrow in Oslo: 4 °C, light rain. In kroner: 200 EUR is 2340.00 NOK."),
            [
                (4.0, unit("°C")),
                (200.0, unit("EUR")),
                (2340.0, unit("NOK"))
            ]
        );
        assert_eq!(
            values("Light rain and 4°C in Oslo tomorrow; 200 euros = 2,340 kroner."),
            [
                (4.0, unit("°C")),
                (200.0, unit("EUR")),
                (2340.0, unit("NOK"))
            ]
        );
        assert_eq!(
            values("Snow in Tromsø tomorrow, minus 3 degrees."),
            [(-3.0, unit("°C"))]
        );
        assert_eq!(
            values("Tomorrow in Tromsø: -3 °C, snow."),
            [(-3.0, unit("°C"))]
        );
        assert_eq!(
            values("What do 1,000 euros come to"),
            [(1000.0, unit("EUR"))]
        );
        assert_eq!(values("NOK value of 2300 EUR"), [(2300.0, unit("EUR"))]);
        assert_eq!(values("I have 1 234,50 kr"), [(1234.5, unit("NOK"))]);
        assert_eq!(
            values("€200 and NOK 2340 and $5"),
            [
                (200.0, unit("EUR")),
                (2340.0, unit("NOK")),
                (5.0, unit("USD"))
            ]
        );
    }

    #[test]
    fn separators_decide_thousands_and_decimals() {
        assert_eq!(read("€80,00")[0].0, 80.0);
        assert_eq!(read("€80,00")[0].1, 2);
        assert_eq!(
            values("1,234.56 and 1.234,56"),
            [(1234.56, None), (1234.56, None)]
        );
        assert_eq!(values("1.234")[0].0, 1.234);
        assert_eq!(
            values("1.234.567 and 1'234 and 12 000")[..],
            [(1234567.0, None), (1234.0, None), (12000.0, None)]
        );
        assert_eq!(values("1,5 or 1,25"), [(1.5, None), (1.25, None)]);
        assert!(values("version 1.2.3 or 1,2345").is_empty());
        assert_eq!(
            values("It costs 5. Then 6, then 7."),
            [(5.0, None), (6.0, None), (7.0, None)]
        );
        assert_eq!(
            values("between 5 and 10 100 times")[..2],
            [(5.0, None), (10100.0, None)]
        );
    }

    #[test]
    fn digits_glued_to_words_are_not_figures() {
        assert!(values("H2O, SmolLM2, v1.2, the 2nd, a 3D film, 4K, COVID-19").is_empty());
        assert_eq!(
            values("3km and 15% and 20°C"),
            [(3.0, unit("km")), (15.0, unit("%")), (20.0, unit("°C"))]
        );
        assert_eq!(values("3 men and 3 m"), [(3.0, None), (3.0, unit("m"))]);
    }

    #[test]
    fn dates_and_times_are_one_figure_each() {
        let read = figures(
            "Hammerfest tmrw weather: 2022-01-01 22:30:00.0000000000000.00",
            &Units::default(),
        );
        let kinds: Vec<FigureKind> = read.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [FigureKind::Date, FigureKind::Time]);
        assert_eq!(read[1].text, "22:30:00");
        let day = figures("on 28.11.2026 or 28/11/2026", &Units::default());
        assert!(day.iter().all(|f| f.kind == FigureKind::Date));
        assert!(day[0].states(&day[1]));
    }

    #[test]
    fn a_figure_states_a_source_of_the_same_value_rounded_or_not() {
        let one = |t: &str| figures(t, &Units::default()).remove(0);
        assert!(one("2340").states(&one("2340.00 NOK")));
        assert!(one("2,340.0 kroner").states(&one("2340.00 NOK")));
        assert!(one("1168.8 NOK").states(&one("1168.83 NOK")));
        assert!(!one("1170 NOK").states(&one("1168.83 NOK")));
        assert!(!one("300.00 NOK").states(&one("300 EUR")));
        assert!(one("300").states(&one("300 EUR")));
        assert!(!one("4.4").states(&one("4")));
        assert!(!one("3 °C").states(&one("-3 °C")));
        assert!(!one("2026-11-28").states(&one("20261128")));
    }

    #[test]
    fn settled_figures_of_every_prefix_are_the_whole_texts() {
        let units = Units::default();
        for full in [
            "Tomorrow in Oslo: 4 °C, light rain. In kroner: 200 EUR is 2340.00 NOK.",
            "Tomorrow in Bergen: €80,00 is 120 EUR is 120 EUR",
            "Snow in Tromsø tomorrow, minus 3 degrees Celsius; 1 234,50 kr left on 2026-11-28 at 22:30.",
            "It is 12 000 NOK, or 1,025.5 EUR (15 %), 3km away.",
        ] {
            let whole = figures(full, &units);
            for end in (0..=full.len()).filter(|e| full.is_char_boundary(*e)) {
                for settled in settled_figures(&full[..end], &units) {
                    assert!(
                        whole.contains(&settled),
                        "{settled:?} of {:?} is not a figure of {full:?}",
                        &full[..end]
                    );
                }
            }
        }
    }

    #[test]
    fn hostile_text_is_read_in_linear_time_without_panicking() {
        let units = Units::default();
        let digits = "1234567890,.'".repeat(80_000);
        let _ = figures(&digits, &units);
        let _ = settled_figures(&digits, &units);
        let dashes = "-.".repeat(500_000);
        assert!(figures(&dashes, &units).is_empty());
        let words = "minus €1,2 3 ".repeat(50_000);
        assert_eq!(figures(&words, &units).len(), 100_000);
    }
}
