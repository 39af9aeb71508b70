//! Figures (numbers with their units) read from text.
//!
//! A figure is a number as a reader takes it from a sentence: `"200 EUR"`, `"€80,00"`, `"-3 °C"`,
//! `"minus 3 degrees"`, `"1,250 kroner"`, a date `"2026-11-28"` or a time `"22:30"`. The grounding
//! check reads the figures of an answer with [`figures`] (or, while the answer streams, with
//! [`settled_figures`]) and asks of each whether it [`states`](Figure::states) a figure of a tool
//! result or of the question. These are the rules, which are also the check's precision and limits.
//!
//! # Numbers
//!
//! * A figure starts at an ASCII digit that is not glued to a letter before it: `H2O`, `SmolLM2`,
//!   `B2`, `x86` hold no figure, nor do digits after a letter and one of `-` `.` `/` (`COVID-19`,
//!   `Fig.3`, `example.com/page/2`). A whole such word (letters, digits and the punctuation between
//!   them) is skipped. A currency code glued before the digits is the exception (`NOK2340`).
//! * Digits followed by letters that are not a unit alias are no figure (`2nd`, `3D`, `4K`, `135M`);
//!   digits followed by an alias are (`3km`, `15%`, `20°C`).
//! * Sign: `-`, `−` (U+2212) or `+` directly before the digits is a sign only when the character
//!   before it is not a letter or digit. After a letter the figure is skipped (`COVID-19`); after a
//!   digit the hyphen is a range, so `"10-15 °C"` is 10 and 15 °C and `"2022-01"` is 2022 and 1
//!   (never −1). The word `minus` (any case) and one space before a number negates it:
//!   `"minus 3 degrees"` is −3 °C, and its text is `"minus 3 degrees"`.
//! * Thousands: `1,234` and `1,234,567` (groups of exactly 3 digits after each comma); `1 234` with a
//!   space, U+00A0 or U+202F between groups of 3 digits; `1'234` (also `’`); `1.234.567` (several
//!   dots). Grouping needs a first group of 1–3 digits and one kind of separator throughout, so
//!   `"in 2026 100 people"` is 2026 and 100. The price of reading space groups: `"on 28 200 EUR"`
//!   is 28200 EUR.
//! * Decimals: a single dot is a decimal point (`1.234` is 1.234, with 3 decimals); a single comma
//!   followed by 1 or 2 digits is a decimal comma (`€80,00` is 80.00, 2 decimals). With both `.` and
//!   `,` the last is the decimal separator (`1.234,56` and `1,234.56` are 1234.56); after space or
//!   apostrophe groups a comma is decimal whatever the digits (`1 234,567` is 1234.567). A `.` or `,`
//!   not followed by a digit ends the number (sentence punctuation).
//! * A separator that fits none of these ends the number, and the digits after it are a figure of
//!   their own that may not use that separator again: `"1,2,3"` is 1, 2 and 3, a version `"1.2.3"` is
//!   1, 2 and 3, and `"1,2345"` is 1 and 2345.
//! * A number of more than 32 digits is no figure (a hash or an identifier), so every value is
//!   finite.
//!
//! # Units
//!
//! A unit alias written right after the number, glued or after one space (U+0020, U+00A0 or U+202F),
//! gives the figure its unit; the longest alias that matches wins (`"3 degrees Celsius"`), and an
//! alias ending in a letter or digit must end a word (`"3 m"` is metres, `"3 men"` has no unit). A
//! currency written right before the number (glued or after one space) gives its unit when no unit
//! follows the number (`"€200"`, `"EUR 200"`, `"kr 50"`, `"-€5"`, `"EUR -200"`); a unit after the
//! number wins (`"NOK 2300 EUR"` is EUR). Before-the-number aliases are those of at most three
//! characters whose unit is a currency; a unit is a currency when its name is three capital letters
//! (an ISO 4217 code such as `EUR`).
//!
//! [`Units::default`] is a built-in table: `€ eur euro euros` → EUR; `nok kr nkr krone kroner
//! kroners "norwegian kroner"` → NOK; `$ usd dollar dollars` → USD; `£ gbp pound pounds` → GBP;
//! `sek kronor` → SEK; `dkk` → DKK; `chf franc francs` → CHF; `jpy ¥ yen` → JPY; `°c ℃ celsius
//! "degrees celsius" "degrees c"` and the bare `degrees`, `degree` and `°` → °C (a bare degree is
//! read as Celsius); `°f ℉ fahrenheit "degrees fahrenheit" "degrees f"` → °F; `% percent "per cent"`
//! → %; `km/h kmh kph "kilometres per hour"` → km/h; `mph "miles per hour"` → mph; and words for
//! lengths, weights, volumes and durations (`metres`, `kilos`, `litres`, `hours`, `minutes`,
//! `seconds`, ...). Words and codes match in any case; the SI symbols `km m cm mm kg g l L ml mL h
//! s` match only as written, so that `"135M"` is not metres. [`Units::with_alias`] adds aliases
//! (in any case); [`Units::none`] reads every figure without a unit.
//!
//! # Dates and times
//!
//! A date (`2026-11-28`, also with `/` or `.`; `28.11.2026`, `28-11-2026`, `28/11/2026`,
//! `11/28/2026`) or a time (`7:05`, `22:30`, `22:30:05`, `22:30:05.250`) is one figure of kind
//! [`FigureKind::Date`] or [`FigureKind::Time`]. Month and day must be in range, hours at most 24,
//! minutes and seconds two digits. A slash date is day first when its first number is over 12,
//! month first when its second is; otherwise it is ambiguous and states either reading. So
//! `"2022-01-01 22:30:00.0000000000000.00"` is the date, the time (with 13 decimals of a second),
//! and 0 (the trailing `00`). A ratio `"3:10"` reads as a time.
//!
//! # When a figure states another
//!
//! See [`Figure::states`]: same kind; numbers with compatible units (equal, or one side without a
//! unit) whose values are equal or the answer is the source rounded to the answer's decimals; dates
//! and times by their numbers, not their writing.
//!
//! Reading is linear in the text: each character is looked at a bounded number of times.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// The most digits a figure may have; longer digit strings are identifiers, not figures.
const MAX_DIGITS: usize = 32;

/// A unit as the checks compare it: a canonical name ("EUR", "NOK", "USD", "GBP", "SEK", "DKK",
/// "CHF", "JPY", "°C", "°F", "%", "km", "m", "cm", "mm", "kg", "g", "l", "ml", "h", "min", "s",
/// "km/h", "mph" ...).
///
/// ```
/// use signet::module::check::figures::{figures, Units};
///
/// let read = figures("200 euros", &Units::default());
/// assert_eq!(read[0].unit.as_ref().map(|u| u.as_str()), Some("EUR"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Unit(Arc<str>);

impl Unit {
    /// A unit of this canonical name.
    ///
    /// ```
    /// use signet::module::check::figures::Unit;
    ///
    /// assert_eq!(Unit::new("NOK").as_str(), "NOK");
    /// ```
    pub fn new(name: &str) -> Unit {
        Unit(Arc::from(name))
    }

    /// The canonical name.
    ///
    /// ```
    /// use signet::module::check::figures::Unit;
    ///
    /// assert_eq!(Unit::new("°C").as_str(), "°C");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is a currency: a name of three capital ASCII letters (an ISO 4217 code).
    ///
    /// ```
    /// use signet::module::check::figures::Unit;
    ///
    /// assert!(Unit::new("EUR").is_currency());
    /// assert!(!Unit::new("km").is_currency());
    /// ```
    pub fn is_currency(&self) -> bool {
        let bytes = self.0.as_bytes();
        bytes.len() == 3 && bytes.iter().all(u8::is_ascii_uppercase)
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One alias of a [`Units`] table.
#[derive(Clone, Debug)]
struct Alias {
    /// The alias's characters, lower-cased unless `case_sensitive`; a space matches any of
    /// [`SPACES`].
    chars: Vec<char>,
    case_sensitive: bool,
    /// Whether it is also read right before a number (a currency code or symbol).
    before: bool,
    unit: Unit,
}

/// The words and symbols read as units, each with its canonical unit: a built-in table
/// (`Units::default()`), which callers extend.
///
/// ```
/// use signet::module::check::figures::{figures, Units};
///
/// let units = Units::default().with_alias("kronor", "SEK");
/// let read = figures("It costs 95 kronor.", &units);
/// assert_eq!(read[0].unit.as_ref().map(|u| u.as_str()), Some("SEK"));
/// ```
#[derive(Clone, Debug)]
pub struct Units {
    aliases: Vec<Alias>,
    /// Alias indices by their first character.
    by_first: HashMap<char, Vec<usize>>,
    /// Alias indices by their last character.
    by_last: HashMap<char, Vec<usize>>,
}

/// Built-in aliases matched only as written: the SI symbols, whose case carries meaning.
const BUILT_IN_EXACT: &[(&str, &str)] = &[
    ("km", "km"),
    ("m", "m"),
    ("cm", "cm"),
    ("mm", "mm"),
    ("kg", "kg"),
    ("g", "g"),
    ("l", "l"),
    ("L", "l"),
    ("ml", "ml"),
    ("mL", "ml"),
    ("h", "h"),
    ("s", "s"),
];

/// Built-in aliases matched in any case.
const BUILT_IN_WORDS: &[(&str, &str)] = &[
    ("€", "EUR"),
    ("eur", "EUR"),
    ("euro", "EUR"),
    ("euros", "EUR"),
    ("nok", "NOK"),
    ("kr", "NOK"),
    ("nkr", "NOK"),
    ("krone", "NOK"),
    ("kroner", "NOK"),
    ("kroners", "NOK"),
    ("norwegian krone", "NOK"),
    ("norwegian kroner", "NOK"),
    ("$", "USD"),
    ("usd", "USD"),
    ("dollar", "USD"),
    ("dollars", "USD"),
    ("us dollars", "USD"),
    ("£", "GBP"),
    ("gbp", "GBP"),
    ("pound", "GBP"),
    ("pounds", "GBP"),
    ("pounds sterling", "GBP"),
    ("sek", "SEK"),
    ("kronor", "SEK"),
    ("swedish kronor", "SEK"),
    ("dkk", "DKK"),
    ("danish kroner", "DKK"),
    ("chf", "CHF"),
    ("franc", "CHF"),
    ("francs", "CHF"),
    ("swiss francs", "CHF"),
    ("jpy", "JPY"),
    ("¥", "JPY"),
    ("yen", "JPY"),
    ("°", "°C"),
    ("º", "°C"),
    ("°c", "°C"),
    ("ºc", "°C"),
    ("℃", "°C"),
    ("celsius", "°C"),
    ("degree", "°C"),
    ("degrees", "°C"),
    ("degree celsius", "°C"),
    ("degrees celsius", "°C"),
    ("degree c", "°C"),
    ("degrees c", "°C"),
    ("°f", "°F"),
    ("ºf", "°F"),
    ("℉", "°F"),
    ("fahrenheit", "°F"),
    ("degree fahrenheit", "°F"),
    ("degrees fahrenheit", "°F"),
    ("degree f", "°F"),
    ("degrees f", "°F"),
    ("%", "%"),
    ("percent", "%"),
    ("per cent", "%"),
    ("km/h", "km/h"),
    ("kmh", "km/h"),
    ("kph", "km/h"),
    ("kilometres per hour", "km/h"),
    ("kilometers per hour", "km/h"),
    ("mph", "mph"),
    ("miles per hour", "mph"),
    ("kilometre", "km"),
    ("kilometres", "km"),
    ("kilometer", "km"),
    ("kilometers", "km"),
    ("metre", "m"),
    ("metres", "m"),
    ("meter", "m"),
    ("meters", "m"),
    ("centimetre", "cm"),
    ("centimetres", "cm"),
    ("centimeter", "cm"),
    ("centimeters", "cm"),
    ("millimetre", "mm"),
    ("millimetres", "mm"),
    ("millimeter", "mm"),
    ("millimeters", "mm"),
    ("kilo", "kg"),
    ("kilos", "kg"),
    ("kilogram", "kg"),
    ("kilograms", "kg"),
    ("gram", "g"),
    ("grams", "g"),
    ("litre", "l"),
    ("litres", "l"),
    ("liter", "l"),
    ("liters", "l"),
    ("millilitre", "ml"),
    ("millilitres", "ml"),
    ("milliliter", "ml"),
    ("milliliters", "ml"),
    ("hr", "h"),
    ("hrs", "h"),
    ("hour", "h"),
    ("hours", "h"),
    ("min", "min"),
    ("mins", "min"),
    ("minute", "min"),
    ("minutes", "min"),
    ("sec", "s"),
    ("secs", "s"),
    ("second", "s"),
    ("seconds", "s"),
];

impl Default for Units {
    /// The built-in table (see the [module documentation](self)).
    fn default() -> Units {
        let mut units = Units::none();
        for (alias, unit) in BUILT_IN_EXACT {
            units.add(alias, Unit::new(unit), true);
        }
        for (alias, unit) in BUILT_IN_WORDS {
            units.add(alias, Unit::new(unit), false);
        }
        units
    }
}

impl Units {
    /// No units at all: every figure is read without a unit.
    ///
    /// ```
    /// use signet::module::check::figures::{figures, Units};
    ///
    /// assert_eq!(figures("200 EUR", &Units::none())[0].unit, None);
    /// ```
    pub fn none() -> Units {
        Units {
            aliases: Vec::new(),
            by_first: HashMap::new(),
            by_last: HashMap::new(),
        }
    }

    /// This table with `alias` (matched in any case) read as `unit`. An alias already in the table
    /// (in any case) now means `unit`; a blank alias is ignored. An alias of at most three characters
    /// whose unit is a currency ([`Unit::is_currency`]) is also read before a number.
    ///
    /// ```
    /// use signet::module::check::figures::{figures, Units};
    ///
    /// let units = Units::none().with_alias("kroner", "NOK");
    /// let read = figures("2 340 kroner", &units);
    /// assert_eq!(read[0].value, 2340.0);
    /// assert_eq!(read[0].unit.as_ref().map(|u| u.as_str()), Some("NOK"));
    /// ```
    pub fn with_alias(mut self, alias: &str, unit: &str) -> Units {
        self.add(alias, Unit::new(unit), false);
        self
    }

    fn add(&mut self, alias: &str, unit: Unit, case_sensitive: bool) {
        let words: Vec<&str> = alias.split_whitespace().collect();
        let alias = words.join(" ");
        let chars: Vec<char> = if case_sensitive {
            alias.chars().collect()
        } else {
            alias.chars().flat_map(char::to_lowercase).collect()
        };
        let (Some(&first), Some(&last)) = (chars.first(), chars.last()) else {
            return;
        };
        let before = unit.is_currency() && chars.len() <= 3;
        if let Some(existing) = self
            .aliases
            .iter_mut()
            .find(|a| a.case_sensitive == case_sensitive && a.chars == chars)
        {
            existing.unit = unit;
            existing.before = before;
            return;
        }
        let index = self.aliases.len();
        self.aliases.push(Alias {
            chars,
            case_sensitive,
            before,
            unit,
        });
        self.by_first.entry(first).or_default().push(index);
        self.by_last.entry(last).or_default().push(index);
    }

    /// Aliases that may start with the text character `c` (as written or lower-cased).
    fn starting_with(&self, c: char) -> impl Iterator<Item = (usize, &Alias)> {
        let lower = c.to_lowercase().next().unwrap_or(c);
        self.lookup(&self.by_first, c, lower)
    }

    /// Aliases that may end with the text character `c` (as written or lower-cased).
    fn ending_with(&self, c: char) -> impl Iterator<Item = (usize, &Alias)> {
        let lower = c.to_lowercase().next_back().unwrap_or(c);
        self.lookup(&self.by_last, c, lower)
    }

    /// The aliases indexed under `c` and, when it differs, under `lower`.
    fn lookup<'u>(
        &'u self,
        index: &'u HashMap<char, Vec<usize>>,
        c: char,
        lower: char,
    ) -> impl Iterator<Item = (usize, &'u Alias)> {
        [Some(c), (lower != c).then_some(lower)]
            .into_iter()
            .flatten()
            .filter_map(move |k| index.get(&k))
            .flatten()
            .filter_map(move |&i| self.aliases.get(i).map(|a| (i, a)))
    }

    /// The unit of the longest alias written at `pos`, and where it ends.
    fn after(&self, cur: &Cursor<'_>, pos: usize) -> Option<(Unit, usize)> {
        let c = cur.at(pos)?;
        let mut best: Option<(usize, usize, &Alias)> = None;
        for (i, alias) in self.starting_with(c) {
            if let Some(end) = match_forward(cur, pos, alias)
                && best.is_none_or(|(bi, be, _)| end > be || (end == be && i > bi))
            {
                best = Some((i, end, alias));
            }
        }
        best.map(|(_, end, alias)| (alias.unit.clone(), end))
    }

    /// The unit of the longest currency alias written right before `pos`, and where it starts.
    fn currency_before(&self, cur: &Cursor<'_>, pos: usize) -> Option<(Unit, usize)> {
        let c = cur.before(pos)?;
        let mut best: Option<(usize, usize, &Alias)> = None;
        for (i, alias) in self.ending_with(c).filter(|(_, a)| a.before) {
            if let Some(start) = match_backward(cur, pos, alias)
                && best.is_none_or(|(bi, bs, _)| start < bs || (start == bs && i > bi))
            {
                best = Some((i, start, alias));
            }
        }
        best.map(|(_, start, alias)| (alias.unit.clone(), start))
    }
}

/// What a figure is: a number, or a date or time (compared by their numbers as written).
///
/// ```
/// use signet::module::check::figures::{figures, FigureKind, Units};
///
/// let kinds: Vec<FigureKind> =
///     figures("On 2026-11-28 at 22:30: 4 °C", &Units::default()).iter().map(|f| f.kind).collect();
/// assert_eq!(kinds, [FigureKind::Date, FigureKind::Time, FigureKind::Number]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FigureKind {
    /// A number, with or without a unit.
    Number,
    /// A date; its `value` is `yyyymmdd` (day first when the writing is ambiguous).
    Date,
    /// A time of day; its `value` is the seconds since midnight.
    Time,
}

/// One figure of a text.
///
/// ```
/// use signet::module::check::figures::{figures, Units};
///
/// let read = figures("Snow, minus 3 degrees.", &Units::default());
/// assert_eq!(read[0].value, -3.0);
/// assert_eq!(read[0].text, "minus 3 degrees");
/// assert_eq!(read[0].span, 6..21);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The number (negative when signed); for a date or time see [`FigureKind`].
    pub value: f64,
    /// Decimals as written (`"2340.00"` has 2).
    pub decimals: u32,
    /// The unit, when one is written beside the number.
    pub unit: Option<Unit>,
    /// The figure as written, e.g. `"-3 °C"`, `"1,250 EUR"`, `"€80"`, `"2026-11-28"`.
    pub text: String,
    /// The byte range of `text` in the input.
    pub span: Range<usize>,
    /// Number, date or time.
    pub kind: FigureKind,
}

impl Figure {
    /// Whether this figure (said in an answer) states `source` (found in a tool result or the
    /// question).
    ///
    /// Numbers: the units must be equal or one side has none, and either the values are equal
    /// (within 1e-9 of the larger magnitude, so `"2340.00"` states `"2340"` and back) or this value
    /// is `source` rounded to this figure's decimals, a tie either way (`"1168.8"` and `"1169"`
    /// state 1168.83, `"1170"` does not, `"4.4"` does not state 4). Non-zero values must have the
    /// same sign (`"3"` does not state −3). Dates: the same year, month and day, whatever the
    /// writing (`"28.11.2026"` states `"2026-11-28"`; an ambiguous slash date states either
    /// reading). Times: the same numbers, leading and trailing zeros aside, and the answer may stop
    /// early (`"7:05"` states `"07:05:00"`, `"22:30"` states `"22:30:05"`).
    ///
    /// ```
    /// use signet::module::check::figures::{figures, Units};
    ///
    /// let units = Units::default();
    /// let source = &figures("1 EUR = 11.6883 NOK", &units)[1];
    /// assert!(figures("11.69 NOK", &units)[0].states(source));
    /// assert!(!figures("11.7 EUR", &units)[0].states(source));
    /// ```
    pub fn states(&self, source: &Figure) -> bool {
        if self.kind != source.kind {
            return false;
        }
        match self.kind {
            FigureKind::Number => self.states_number(source),
            FigureKind::Date => match (date_key(&self.text), date_key(&source.text)) {
                (Some(a), Some(b)) => a.agrees(b),
                _ => false,
            },
            FigureKind::Time => {
                let (a, b) = (time_key(&self.text), time_key(&source.text));
                !a.is_empty() && b.starts_with(&a)
            }
        }
    }

    fn states_number(&self, source: &Figure) -> bool {
        if let (Some(a), Some(b)) = (&self.unit, &source.unit)
            && a != b
        {
            return false;
        }
        let (a, b) = (self.value, source.value);
        if !a.is_finite() || !b.is_finite() {
            return false;
        }
        if a != 0.0 && b != 0.0 && (a < 0.0) != (b < 0.0) {
            return false;
        }
        if (a - b).abs() < 1e-9 * a.abs().max(b.abs()).max(1.0) {
            return true;
        }
        let decimals = i32::try_from(self.decimals.min(300)).unwrap_or(300);
        let scale = 10f64.powi(decimals);
        let (sa, sb) = (a * scale, b * scale);
        sa.is_finite() && sb.is_finite() && (sa - sb).abs() <= 0.5 + 1e-9 * sb.abs().max(1.0)
    }
}

/// A date as its numbers: year, month, day; or, for a slash date that reads either way, the first
/// and second numbers and the year.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DateKey {
    Ymd(u32, u32, u32),
    Either(u32, u32, u32),
}

impl DateKey {
    fn agrees(self, other: DateKey) -> bool {
        match (self, other) {
            (DateKey::Ymd(..), DateKey::Ymd(..)) | (DateKey::Either(..), DateKey::Either(..)) => {
                self == other
            }
            (DateKey::Either(a, b, y), DateKey::Ymd(y2, m, d))
            | (DateKey::Ymd(y2, m, d), DateKey::Either(a, b, y)) => {
                y == y2 && ((a, b) == (d, m) || (a, b) == (m, d))
            }
        }
    }
}

/// The digit groups of a text, in order.
fn digit_groups(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|g| !g.is_empty())
}

fn small_number(digits: &str) -> Option<u32> {
    if digits.len() > 9 {
        return None;
    }
    digits.parse().ok()
}

/// Reads a date as written by [`figures`].
fn date_key(text: &str) -> Option<DateKey> {
    let mut groups = digit_groups(text);
    let (g0, g1, g2) = (groups.next()?, groups.next()?, groups.next()?);
    let sep = text.chars().find(|c| !c.is_ascii_digit())?;
    let (n0, n1, n2) = (small_number(g0)?, small_number(g1)?, small_number(g2)?);
    let key = if g0.len() == 4 {
        DateKey::Ymd(n0, n1, n2)
    } else if sep == '/' {
        if n0 > 12 {
            DateKey::Ymd(n2, n1, n0)
        } else if n1 > 12 {
            DateKey::Ymd(n2, n0, n1)
        } else {
            DateKey::Either(n0, n1, n2)
        }
    } else {
        DateKey::Ymd(n2, n1, n0)
    };
    Some(key)
}

/// A time as its numbers (leading zeros off, the fraction of a second without trailing zeros),
/// without trailing zero seconds or fraction.
fn time_key(text: &str) -> Vec<String> {
    let mut key: Vec<String> = digit_groups(text)
        .enumerate()
        .map(|(i, g)| {
            if i >= 3 {
                g.trim_end_matches('0').to_string()
            } else {
                let trimmed = g.trim_start_matches('0');
                if trimmed.is_empty() { "0" } else { trimmed }.to_string()
            }
        })
        .collect();
    while key.len() > 2 && key.last().is_some_and(|g| g.is_empty() || g == "0") {
        key.pop();
    }
    key
}

/// The figures of a text, in order. See the [module documentation](self) for the rules.
///
/// ```
/// use signet::module::check::figures::{figures, Units};
///
/// let text = "Tomorrow in Oslo: 4 °C, light rain. In kroner: 200 EUR is 2340.00 NOK.";
/// let read: Vec<(f64, u32, Option<String>)> = figures(text, &Units::default())
///     .into_iter()
///     .map(|f| (f.value, f.decimals, f.unit.map(|u| u.to_string())))
///     .collect();
/// assert_eq!(
///     read,
///     [
///         (4.0, 0, Some("°C".to_string())),
///         (200.0, 0, Some("EUR".to_string())),
///         (2340.0, 2, Some("NOK".to_string())),
///     ]
/// );
/// ```
pub fn figures(text: &str, units: &Units) -> Vec<Figure> {
    scan(text, units, false)
}

/// Figures of a text that is still being written: only those no later text can change (their
/// digits, sign and unit are settled).
///
/// A figure is settled when reading it never needed a character past the end of the text so far:
/// the number is followed by a character that ends it, and every unit alias that could follow it
/// has been ruled out or completed. Once one figure is not settled, none after it is. The settled
/// figures of a prefix are the first figures of any longer text, with the same span, value and
/// unit. Calling it on the whole text so far at every delta costs time linear in that text each
/// time.
///
/// ```
/// use signet::module::check::figures::{settled_figures, Units};
///
/// let units = Units::default();
/// let settled = settled_figures("300 EUR is 3", &units);
/// assert_eq!(settled.len(), 1);
/// assert_eq!(settled[0].text, "300 EUR");
/// assert!(settled_figures("It is 4", &units).is_empty());
/// ```
pub fn settled_figures(text: &str, units: &Units) -> Vec<Figure> {
    scan(text, units, true)
}

mod scan;
#[cfg(test)]
mod tests;

use scan::{Cursor, match_backward, match_forward, scan};
