//! `ast.literal_eval`, which DSPy's `parse_value` tries when `json_repair` finds nothing: a
//! Python literal — numbers (`+3`, `1_000`, `0x10`, `.5`), strings in any quotes (adjacent ones
//! joined), `True`/`False`/`None`, lists, tuples (`1, 2` without parentheses too), dicts and sets,
//! with `#` comments. Anything else (a name, an operator, a complex number, a number Signet's JSON
//! values cannot hold) is `None`. Nesting stops at [`MAX_NESTING`]; work is linear in the text.

use serde_json::{Map, Number, Value};

use super::MAX_NESTING;

/// `ast.literal_eval(text)` as a JSON value (tuples and sets are lists; dict keys that are not
/// strings are written as JSON).
pub(super) fn literal_eval(text: &str) -> Option<Value> {
    let mut reader = Reader {
        text: text.trim_start_matches([' ', '\t']),
        pos: 0,
        depth: 0,
    };
    let value = reader.expression_list(None)?;
    reader.skip_space(true);
    reader.at_end().then_some(value)
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    /// Brackets open around `pos` (newlines are whitespace only inside them).
    depth: usize,
}

impl<'a> Reader<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    /// Spaces, tabs, comments, line continuations, and newlines inside brackets (or, with
    /// `trailing`, at the end of the text).
    fn skip_space(&mut self, trailing: bool) {
        loop {
            let rest = self.rest();
            let Some(c) = rest.chars().next() else { return };
            if c == ' ' || c == '\t' || c == '\u{c}' {
                self.pos += 1;
            } else if c == '#' {
                self.pos += rest.find(['\n', '\r']).unwrap_or(rest.len());
            } else if rest.starts_with("\\\n") {
                self.pos += 2;
            } else if rest.starts_with("\\\r\n") {
                self.pos += 3;
            } else if (c == '\n' || c == '\r') && (self.depth > 0 || trailing) {
                if trailing && self.depth == 0 {
                    // Only more blank lines or comments may follow the expression.
                    let after = rest.trim_start();
                    if after.is_empty() || after.starts_with('#') {
                        self.pos += c.len_utf8();
                        continue;
                    }
                    return;
                }
                self.pos += c.len_utf8();
            } else {
                return;
            }
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space(false);
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// Comma-separated expressions up to `close` (or the end of the text when `None`): one
    /// without a comma is itself, several (or a trailing comma) a tuple.
    fn expression_list(&mut self, close: Option<char>) -> Option<Value> {
        let (mut items, comma) = self.items(close)?;
        if items.is_empty() && close.is_none() {
            return None;
        }
        if items.len() == 1 && !comma {
            items.pop()
        } else {
            Some(Value::Array(items))
        }
    }

    /// Comma-separated expressions up to `close`, and whether a comma was seen.
    fn items(&mut self, close: Option<char>) -> Option<(Vec<Value>, bool)> {
        let mut items = Vec::new();
        let mut comma = false;
        loop {
            self.skip_space(close.is_none());
            match (self.peek(), close) {
                (None, None) => break,
                (Some(c), Some(end)) if c == end => break,
                (Some(_), None) if self.at_line_end() => break,
                _ => {}
            }
            items.push(self.atom()?);
            if self.eat(',') {
                comma = true;
            } else {
                break;
            }
        }
        Some((items, comma))
    }

    fn at_line_end(&self) -> bool {
        self.depth == 0 && self.rest().starts_with(['\n', '\r'])
    }

    fn open(&mut self) -> Option<()> {
        if self.depth >= MAX_NESTING {
            return None;
        }
        self.depth += 1;
        self.pos += 1;
        Some(())
    }

    fn close(&mut self, c: char) -> Option<()> {
        if !self.eat(c) {
            return None;
        }
        self.depth -= 1;
        Some(())
    }

    fn atom(&mut self) -> Option<Value> {
        self.skip_space(false);
        let c = self.peek()?;
        match c {
            '(' => {
                self.open()?;
                let value = self.expression_list(Some(')'))?;
                self.close(')')?;
                Some(value)
            }
            '[' => {
                self.open()?;
                let (items, _) = self.items(Some(']'))?;
                self.close(']')?;
                Some(Value::Array(items))
            }
            '{' => {
                self.open()?;
                let value = self.dict_or_set()?;
                self.close('}')?;
                Some(value)
            }
            '+' | '-' => {
                self.pos += 1;
                self.skip_space(false);
                let number = self.number()?;
                if c == '-' {
                    negate(&number)
                } else {
                    Some(number)
                }
            }
            c if c.is_ascii_digit() || c == '.' => self.number(),
            _ => self.string_or_name(),
        }
    }

    fn dict_or_set(&mut self) -> Option<Value> {
        self.skip_space(false);
        if self.peek() == Some('}') {
            return Some(Value::Object(Map::new()));
        }
        let first = self.atom()?;
        if self.eat(':') {
            let mut map = Map::new();
            let mut key = first;
            loop {
                let value = self.atom()?;
                map.insert(key_text(key), value);
                if !self.eat(',') {
                    break;
                }
                self.skip_space(false);
                if self.peek() == Some('}') {
                    break;
                }
                key = self.atom()?;
                if !self.eat(':') {
                    return None;
                }
            }
            return Some(Value::Object(map));
        }
        let mut items = vec![first];
        while self.eat(',') {
            self.skip_space(false);
            if self.peek() == Some('}') {
                break;
            }
            let item = self.atom()?;
            if !items.contains(&item) {
                items.push(item);
            }
        }
        Some(Value::Array(items))
    }

    /// A number token: decimal (no leading zeros), `0x`/`0o`/`0b`, or a float; `_` only between
    /// digits. Complex numbers and values JSON cannot hold (`1e999`) are `None`.
    fn number(&mut self) -> Option<Value> {
        let rest = self.rest();
        let bytes = rest.as_bytes();
        let digits_from = |mut i: usize| {
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
                i += 1;
            }
            i
        };
        let lower = rest.get(..2).map(str::to_ascii_lowercase);
        let end = if matches!(lower.as_deref(), Some("0x" | "0o" | "0b")) {
            2 + rest[2..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len() - 2)
        } else {
            let mut i = digits_from(0);
            if bytes.get(i) == Some(&b'.') {
                i = digits_from(i + 1);
            }
            if matches!(bytes.get(i), Some(b'e' | b'E')) {
                let mut j = i + 1;
                if matches!(bytes.get(j), Some(b'+' | b'-')) {
                    j += 1;
                }
                if bytes.get(j).is_some_and(u8::is_ascii_digit) {
                    i = digits_from(j);
                }
            }
            if matches!(bytes.get(i), Some(b'j' | b'J')) {
                return None;
            }
            i
        };
        let token = &rest[..end];
        if rest[end..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            return None;
        }
        self.pos += end;
        number_token(token)
    }

    /// A string (adjacent ones joined) or `True` / `False` / `None`.
    fn string_or_name(&mut self) -> Option<Value> {
        let rest = self.rest();
        let word_end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let word = &rest[..word_end];
        let after = rest[word_end..].chars().next();
        if after.is_some_and(|c| c == '\'' || c == '"') {
            let prefix = word.to_ascii_lowercase();
            if prefix.is_empty() || prefix == "u" || prefix == "r" {
                return self.strings().map(Value::String);
            }
            return None;
        }
        if word.is_empty() {
            return self.strings().map(Value::String);
        }
        self.pos += word_end;
        match word {
            "True" => Some(Value::Bool(true)),
            "False" => Some(Value::Bool(false)),
            "None" => Some(Value::Null),
            _ => None,
        }
    }

    /// One or more adjacent string literals, joined.
    fn strings(&mut self) -> Option<String> {
        let mut out = String::new();
        let mut any = false;
        loop {
            self.skip_space(false);
            let rest = self.rest();
            let raw = rest.starts_with(['r', 'R']);
            let prefix = usize::from(rest.starts_with(['r', 'R', 'u', 'U']));
            let quote = rest[prefix..].chars().next();
            let Some(quote @ ('\'' | '"')) = quote else {
                break;
            };
            self.pos += prefix;
            out.push_str(&self.string(quote, raw)?);
            any = true;
        }
        any.then_some(out)
    }

    fn string(&mut self, quote: char, raw: bool) -> Option<String> {
        let triple: String = std::iter::repeat_n(quote, 3).collect();
        let long = self.rest().starts_with(&triple);
        self.pos += if long { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let rest = self.rest();
            if long && rest.starts_with(&triple) {
                self.pos += 3;
                return Some(out);
            }
            let c = rest.chars().next()?;
            self.pos += c.len_utf8();
            match c {
                c if c == quote && !long => return Some(out),
                '\n' | '\r' if !long => return None,
                '\\' if raw => {
                    out.push('\\');
                    if let Some(next) = self.peek() {
                        self.pos += next.len_utf8();
                        out.push(next);
                    }
                }
                '\\' => self.escape(&mut out)?,
                c => out.push(c),
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Option<()> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        let simple = match c {
            '\n' => Some(None),
            '\\' => Some(Some('\\')),
            '\'' => Some(Some('\'')),
            '"' => Some(Some('"')),
            'a' => Some(Some('\u{7}')),
            'b' => Some(Some('\u{8}')),
            'f' => Some(Some('\u{c}')),
            'n' => Some(Some('\n')),
            'r' => Some(Some('\r')),
            't' => Some(Some('\t')),
            'v' => Some(Some('\u{b}')),
            _ => None,
        };
        if let Some(simple) = simple {
            out.extend(simple);
            return Some(());
        }
        let hex = |reader: &mut Self, len: usize| -> Option<char> {
            let digits = reader.text.get(reader.pos..reader.pos + len)?;
            let code = u32::from_str_radix(digits, 16).ok()?;
            reader.pos += len;
            char::from_u32(code)
        };
        match c {
            'x' => out.push(hex(self, 2)?),
            'u' => out.push(hex(self, 4)?),
            'U' => out.push(hex(self, 8)?),
            '0'..='7' => {
                let digits: String = std::iter::once(c)
                    .chain(self.rest().chars().take_while(|d| ('0'..='7').contains(d)))
                    .take(3)
                    .collect();
                self.pos += digits.len() - 1;
                out.push(char::from_u32(u32::from_str_radix(&digits, 8).ok()?)?);
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
        Some(())
    }
}

fn negate(number: &Value) -> Option<Value> {
    match number {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.checked_neg().map(Value::from)
            } else {
                Number::from_f64(-n.as_f64()?).map(Value::Number)
            }
        }
        _ => None,
    }
}

fn key_text(key: Value) -> String {
    match key {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// A Python number token as a JSON number.
fn number_token(token: &str) -> Option<Value> {
    let lower = token.to_ascii_lowercase();
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = lower.strip_prefix(prefix) {
            let digits = underscored(digits.strip_prefix('_').unwrap_or(digits), |c| {
                c.is_digit(radix)
            })?;
            return u64::from_str_radix(&digits, radix)
                .ok()
                .map(Value::from)
                .or_else(|| big(&digits, radix));
        }
    }
    if lower.ends_with('j') {
        return None;
    }
    let is_float = lower.contains(['.', 'e']);
    if !is_float {
        let digits = underscored(&lower, |c| c.is_ascii_digit())?;
        if digits.len() > 1 && digits.starts_with('0') && digits.chars().any(|c| c != '0') {
            return None; // leading zeros in a decimal integer
        }
        return digits
            .parse::<i64>()
            .ok()
            .map(Value::from)
            .or_else(|| digits.parse::<u64>().ok().map(Value::from))
            .or_else(|| big(&digits, 10));
    }
    let (mantissa, exponent) = match lower.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (lower.as_str(), None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let whole = if whole.is_empty() {
        String::new()
    } else {
        underscored(whole, |c| c.is_ascii_digit())?
    };
    let fraction = if fraction.is_empty() {
        String::new()
    } else {
        underscored(fraction, |c| c.is_ascii_digit())?
    };
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut text = format!("{whole}.{fraction}");
    if let Some(exponent) = exponent {
        let (sign, digits) = match exponent.strip_prefix(['+', '-']) {
            Some(d) => (&exponent[..1], d),
            None => ("", exponent),
        };
        text = format!(
            "{text}e{sign}{}",
            underscored(digits, |c| c.is_ascii_digit())?
        );
    }
    let x: f64 = format!("0{text}").parse().ok()?;
    Number::from_f64(x).map(Value::Number)
}

/// `digits` without its underscores, when each underscore sits between two digits.
fn underscored(digits: &str, is_digit: impl Fn(char) -> bool) -> Option<String> {
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') {
        return None;
    }
    if digits.contains("__") || !digits.chars().all(|c| c == '_' || is_digit(c)) {
        return None;
    }
    Some(digits.replace('_', ""))
}

/// An integer too big for 64 bits, as the nearest float (Python keeps it exact).
fn big(digits: &str, radix: u32) -> Option<Value> {
    let mut x = 0f64;
    for c in digits.chars() {
        x = x * f64::from(radix) + f64::from(c.to_digit(radix)?);
    }
    Number::from_f64(x).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_literals() {
        let cases = [
            ("+3", json!(3)),
            ("-3", json!(-3)),
            ("- 3", json!(-3)),
            ("1_000", json!(1000)),
            ("0x10", json!(16)),
            ("0o17", json!(15)),
            ("0b101", json!(5)),
            ("0X_ff", json!(255)),
            ("1,000", json!([1, 0])),
            ("1, 2", json!([1, 2])),
            ("1,", json!([1])),
            (".5", json!(0.5)),
            ("5.", json!(5.0)),
            ("1e3", json!(1000.0)),
            ("1_0.5e-1", json!(1.05)),
            ("'no'", json!("no")),
            ("\"a\" 'b'", json!("ab")),
            ("'''x'''", json!("x")),
            ("r'a\\n'", json!("a\\n")),
            ("'\\x41\\u00e9\\101'", json!("Aé\u{41}")),
            ("True", json!(true)),
            ("None", json!(null)),
            ("3 # three", json!(3)),
            ("[1, 'a', None]", json!([1, "a", null])),
            ("[[1, 2]]", json!([[1, 2]])),
            ("[(1, 2)]", json!([[1, 2]])),
            ("[1]", json!([1])),
            ("[]", json!([])),
            ("()", json!([])),
            ("(1)", json!(1)),
            ("(1,)", json!([1])),
            ("{'x': 0.5, 'y': 1}", json!({"x": 0.5, "y": 1})),
            ("{1: 'a'}", json!({"1": "a"})),
            ("{1, 2, 1}", json!([1, 2])),
            ("{}", json!({})),
            ("[1,\n 2]", json!([1, 2])),
            ("00", json!(0)),
        ];
        for (text, want) in cases {
            assert_eq!(literal_eval(text), Some(want), "{text:?}");
        }
    }

    #[test]
    fn what_literal_eval_refuses() {
        for text in [
            "inf", "nan", "true", "abc", "1/2", "50%", "007", "1__0", "1_", "--3", "-True", "1j",
            "1\n2", "", "f'x'", "[1", "'a", "x: 0.5", "1e999", "0x", "1 2",
        ] {
            assert_eq!(literal_eval(text), None, "{text:?}");
        }
        let deep = format!(
            "{}{}",
            "[".repeat(MAX_NESTING + 1),
            "]".repeat(MAX_NESTING + 1)
        );
        assert_eq!(literal_eval(&deep), None);
    }
}
