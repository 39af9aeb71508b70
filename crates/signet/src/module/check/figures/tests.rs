//! The figures of real answers, the separators, units, dates and the rules of `states`.

use super::*;
use std::time::{Duration, Instant};

/// (value, decimals, unit, text) of each figure.
fn read(text: &str) -> Vec<(f64, u32, Option<String>, String)> {
    figures(text, &Units::default())
        .into_iter()
        .map(|f| (f.value, f.decimals, f.unit.map(|u| u.to_string()), f.text))
        .collect()
}

/// (value, unit) of each figure.
fn values(text: &str) -> Vec<(f64, Option<String>)> {
    read(text).into_iter().map(|(v, _, u, _)| (v, u)).collect()
}

fn n(value: f64, unit: &str) -> (f64, Option<String>) {
    (value, Some(unit.to_string()))
}

fn bare(value: f64) -> (f64, Option<String>) {
    (value, None)
}

fn one(text: &str) -> Figure {
    let mut all = figures(text, &Units::default());
    assert_eq!(all.len(), 1, "{text:?} -> {all:?}");
    all.remove(0)
}

const REAL_ANSWERS: &[&str] = &[
    "Tomorrow in Oslo: 4 °C, light rain. In kroner: 200 EUR is 2340.00 NOK.",
    "Tomorrow in Bergen: €80,00 is 120 EUR is 120 EUR",
    "Hammerfest tmrw weather: 2022-01-01 22:30:00.0000000000000.00",
    "Snow in Tromsø tomorrow, minus 3 degrees.",
    "What do 1,000 euros come to",
    "NOK value of 2300 EUR",
    "I have 1 234,50 kr",
    "Light rain and 4°C in Oslo tomorrow; 200 euros = 2,340 kroner.",
    "Tomorrow in Kristiansand: 6.40 eur is 6.40 eur is 6.40 eur is",
    "In Tromsø it is −3 °C at 7:05 on 28.11.2026; 1.234,56 NOK or $5 or 15 %.",
    "EUR 200 = NOK 2340 (12 km/h wind, 3 degrees Celsius, COVID-19, SmolLM2).",
];

#[test]
fn a_weather_and_money_answer_has_a_temperature_and_two_amounts() {
    assert_eq!(
        read(REAL_ANSWERS[0]),
        [
            (4.0, 0, Some("°C".into()), "4 °C".into()),
            (200.0, 0, Some("EUR".into()), "200 EUR".into()),
            (2340.0, 2, Some("NOK".into()), "2340.00 NOK".into()),
        ]
    );
}

#[test]
fn a_euro_sign_and_a_decimal_comma_make_eighty_euros_with_two_decimals() {
    assert_eq!(
        read(REAL_ANSWERS[1]),
        [
            (80.0, 2, Some("EUR".into()), "€80,00".into()),
            (120.0, 0, Some("EUR".into()), "120 EUR".into()),
            (120.0, 0, Some("EUR".into()), "120 EUR".into()),
        ]
    );
}

#[test]
fn a_garbled_timestamp_is_a_date_a_time_and_a_trailing_zero() {
    let all = figures(REAL_ANSWERS[2], &Units::default());
    let summary: Vec<(FigureKind, &str)> = all.iter().map(|f| (f.kind, f.text.as_str())).collect();
    assert_eq!(
        summary,
        [
            (FigureKind::Date, "2022-01-01"),
            (FigureKind::Time, "22:30:00.0000000000000"),
            (FigureKind::Number, "00"),
        ]
    );
    assert_eq!(all[0].value, 20_220_101.0);
    assert_eq!(all[1].value, 22.0 * 3600.0 + 30.0 * 60.0);
    assert_eq!(all[1].decimals, 13);
}

#[test]
fn minus_before_a_number_negates_it_and_bare_degrees_are_celsius() {
    assert_eq!(
        read(REAL_ANSWERS[3]),
        [(-3.0, 0, Some("°C".into()), "minus 3 degrees".into())]
    );
    assert_eq!(values("MINUS 2 °C"), [n(-2.0, "°C")]);
    assert_eq!(values("Dominus 2"), [bare(2.0)]);
}

#[test]
fn a_comma_before_three_digits_groups_thousands() {
    assert_eq!(values(REAL_ANSWERS[4]), [n(1000.0, "EUR")]);
    assert_eq!(values("1,234,567 kr"), [n(1_234_567.0, "NOK")]);
}

#[test]
fn a_unit_after_the_number_wins_over_a_currency_before_it() {
    assert_eq!(values(REAL_ANSWERS[5]), [n(2300.0, "EUR")]);
    assert_eq!(values("NOK 2300 EUR"), [n(2300.0, "EUR")]);
}

#[test]
fn space_groups_and_a_decimal_comma_read_as_one_amount() {
    assert_eq!(
        read(REAL_ANSWERS[6]),
        [(1234.5, 2, Some("NOK".into()), "1 234,50 kr".into())]
    );
    assert_eq!(values("2\u{a0}340 kroner"), [n(2340.0, "NOK")]);
    assert_eq!(
        values("2\u{202f}340\u{202f}000 NOK"),
        [n(2_340_000.0, "NOK")]
    );
    assert_eq!(values("2 340 kroner"), [n(2340.0, "NOK")]);
}

#[test]
fn units_glued_to_the_number_are_read() {
    assert_eq!(
        values(REAL_ANSWERS[7]),
        [n(4.0, "°C"), n(200.0, "EUR"), n(2340.0, "NOK")]
    );
    assert_eq!(
        values("3km, 15%, 20°C, -3°C, 5$"),
        [
            n(3.0, "km"),
            n(15.0, "%"),
            n(20.0, "°C"),
            n(-3.0, "°C"),
            n(5.0, "USD")
        ]
    );
}

#[test]
fn a_hyphen_is_a_sign_only_after_neither_letter_nor_digit() {
    assert_eq!(values("-3 °C and −4 °C"), [n(-3.0, "°C"), n(-4.0, "°C")]);
    assert_eq!(values("2022-01"), [bare(2022.0), bare(1.0)]);
    assert_eq!(values("10-15 °C"), [bare(10.0), n(15.0, "°C")]);
    assert!(values("COVID-19").is_empty());
    assert_eq!(values("+3 °C"), [n(3.0, "°C")]);
}

#[test]
fn digits_glued_to_letters_are_not_figures() {
    for text in [
        "H2O",
        "SmolLM2",
        "B2",
        "x86",
        "2nd",
        "3D",
        "4K",
        "135M",
        "a_1",
        "Fig.3",
        "see example.com/page/2024/11",
        "x86-64",
        "5kms",
    ] {
        assert!(values(text).is_empty(), "{text:?} -> {:?}", values(text));
    }
    assert_eq!(values("H2O, then 5 km"), [n(5.0, "km")]);
}

#[test]
fn a_currency_code_glued_before_the_digits_is_a_unit() {
    assert_eq!(values("NOK2340"), [n(2340.0, "NOK")]);
    assert!(values("ABCNOK2340").is_empty());
}

#[test]
fn aliases_match_on_word_boundaries_only() {
    assert_eq!(values("200 kroner"), [n(200.0, "NOK")]);
    assert_eq!(values("200 kronerX"), [bare(200.0)]);
    assert_eq!(values("3 m"), [n(3.0, "m")]);
    assert_eq!(values("3 men"), [bare(3.0)]);
    assert_eq!(values("5 min"), [n(5.0, "min")]);
    assert_eq!(values("a 7 Mb file"), [bare(7.0)]);
}

#[test]
fn the_longest_alias_wins() {
    assert_eq!(values("3 degrees Celsius"), [n(3.0, "°C")]);
    assert_eq!(values("3 degrees F"), [n(3.0, "°F")]);
    assert_eq!(values("12 km/h"), [n(12.0, "km/h")]);
    assert_eq!(values("15 per cent"), [n(15.0, "%")]);
    assert_eq!(values("15 percent"), [n(15.0, "%")]);
    assert_eq!(values("100 Norwegian kroner"), [n(100.0, "NOK")]);
}

#[test]
fn currency_symbols_and_codes_before_the_number_are_units() {
    assert_eq!(
        read("€200, EUR 200, NOK 2340, $5, £3, kr 50, € 7, -€5, EUR -200"),
        [
            (200.0, 0, Some("EUR".into()), "€200".into()),
            (200.0, 0, Some("EUR".into()), "EUR 200".into()),
            (2340.0, 0, Some("NOK".into()), "NOK 2340".into()),
            (5.0, 0, Some("USD".into()), "$5".into()),
            (3.0, 0, Some("GBP".into()), "£3".into()),
            (50.0, 0, Some("NOK".into()), "kr 50".into()),
            (7.0, 0, Some("EUR".into()), "€ 7".into()),
            (-5.0, 0, Some("EUR".into()), "-€5".into()),
            (-200.0, 0, Some("EUR".into()), "EUR -200".into()),
        ]
    );
    assert_eq!(values("In kroner: 200"), [bare(200.0)]);
    assert_eq!(values("euros 200"), [bare(200.0)]);
}

#[test]
fn the_last_of_dot_and_comma_is_the_decimal_separator() {
    assert_eq!(read("1.234,56")[0].0, 1234.56);
    assert_eq!(read("1.234,56")[0].1, 2);
    assert_eq!(read("1,234.56")[0].0, 1234.56);
    assert_eq!(read("1.234.567,8")[0].0, 1_234_567.8);
}

#[test]
fn a_single_dot_is_a_decimal_point_and_several_dots_group_thousands() {
    assert_eq!(read("1.234")[0].0, 1.234);
    assert_eq!(read("1.234")[0].1, 3);
    assert_eq!(values("1.234.567"), [bare(1_234_567.0)]);
    assert_eq!(values("1'234 CHF"), [n(1234.0, "CHF")]);
    assert_eq!(values("1’234’567"), [bare(1_234_567.0)]);
}

#[test]
fn separators_that_fit_no_rule_end_the_number() {
    assert_eq!(values("1,2,3"), [bare(1.0), bare(2.0), bare(3.0)]);
    assert_eq!(values("1.2.3"), [bare(1.0), bare(2.0), bare(3.0)]);
    assert_eq!(values("1,2345"), [bare(1.0), bare(2345.0)]);
    assert_eq!(values("in 2026 100 people"), [bare(2026.0), bare(100.0)]);
    assert_eq!(values("12,5 %"), [n(12.5, "%")]);
}

#[test]
fn sentence_punctuation_after_a_number_ends_it() {
    assert_eq!(read("It is 200. Then 300, then 4."), {
        vec![
            (200.0, 0, None, "200".to_string()),
            (300.0, 0, None, "300".to_string()),
            (4.0, 0, None, "4".to_string()),
        ]
    });
}

#[test]
fn a_number_of_more_than_32_digits_is_not_a_figure() {
    let long = "1".repeat(33);
    assert!(values(&long).is_empty());
    assert_eq!(values(&"9".repeat(32)).len(), 1);
}

#[test]
fn dates_and_times_are_single_figures() {
    for (text, kind) in [
        ("2026-11-28", FigureKind::Date),
        ("28.11.2026", FigureKind::Date),
        ("28/11/2026", FigureKind::Date),
        ("11/28/2026", FigureKind::Date),
        ("22:30", FigureKind::Time),
        ("22:30:05", FigureKind::Time),
        ("7:05", FigureKind::Time),
    ] {
        let figure = one(text);
        assert_eq!((figure.kind, figure.text.as_str()), (kind, text));
    }
    assert_eq!(one("28.11.2026").value, 20_261_128.0);
    assert_eq!(one("7:05").value, 7.0 * 3600.0 + 5.0 * 60.0);
    assert_eq!(values("2026-13-01").len(), 3);
    assert_eq!(values("25:00"), [bare(25.0), bare(0.0)]);
}

#[test]
fn units_none_reads_every_figure_without_a_unit() {
    let all = figures("200 EUR and €5", &Units::none());
    assert!(all.iter().all(|f| f.unit.is_none()));
    assert_eq!(all.len(), 2);
}

#[test]
fn a_caller_alias_matches_in_any_case_and_replaces_a_built_in_one() {
    let units = Units::default()
        .with_alias("Kronor", "SEK")
        .with_alias("kr", "SEK");
    let all = figures("95 KRONOR, 20 kr, kr 7", &units);
    let units_read: Vec<Option<&str>> = all
        .iter()
        .map(|f| f.unit.as_ref().map(Unit::as_str))
        .collect();
    assert_eq!(units_read, [Some("SEK"), Some("SEK"), Some("SEK")]);
    let blank = Units::none().with_alias("  ", "EUR");
    assert!(figures("5", &blank)[0].unit.is_none());
}

#[test]
fn equal_values_state_each_other_whatever_their_decimals() {
    let units = Units::default();
    let a = one("2340.00 NOK");
    let b = one("2340 NOK");
    assert!(a.states(&b) && b.states(&a));
    let unitless = &figures("2340", &units)[0];
    assert!(unitless.states(&a) && a.states(unitless));
}

#[test]
fn an_answer_rounded_to_its_decimals_states_the_source() {
    let source = one("1168.83");
    assert!(one("1168.8").states(&source));
    assert!(one("1169").states(&source));
    assert!(!one("1170").states(&source));
    assert!(!one("4.4").states(&one("4")));
    assert!(one("2.5").states(&one("2.46")));
}

#[test]
fn a_negative_answer_states_only_a_negative_source() {
    assert!(one("-3").states(&one("-3 °C")));
    assert!(!one("3").states(&one("-3")));
    assert!(!one("-3").states(&one("3")));
}

#[test]
fn different_units_or_kinds_never_state_each_other() {
    assert!(!one("200 EUR").states(&one("200 NOK")));
    assert!(!one("2026").states(&one("2026-11-28")));
}

#[test]
fn dates_and_times_state_each_other_by_their_numbers() {
    let iso = one("2026-11-28");
    assert!(one("28.11.2026").states(&iso));
    assert!(one("11/28/2026").states(&iso));
    assert!(one("28/11/2026").states(&iso));
    assert!(!one("27.11.2026").states(&iso));
    let ambiguous = one("05/06/2026");
    assert!(ambiguous.states(&one("2026-06-05")));
    assert!(ambiguous.states(&one("2026-05-06")));
    assert!(one("7:05").states(&one("07:05")));
    assert!(one("22:30").states(&one("22:30:05")));
    assert!(one("22:30:00.000").states(&one("22:30")));
    assert!(!one("22:30:05").states(&one("22:30")));
    assert!(!one("22:31").states(&one("22:30")));
}

#[test]
fn settled_figures_need_the_text_that_could_still_change_them() {
    let units = Units::default();
    let texts = |t: &str| -> Vec<String> {
        settled_figures(t, &units)
            .into_iter()
            .map(|f| f.text)
            .collect()
    };
    assert_eq!(texts("300 EUR is 3"), ["300 EUR"]);
    assert_eq!(texts("300 EUR is 300"), ["300 EUR"]);
    assert!(texts("It is 4").is_empty());
    assert!(texts("It is 4.").is_empty());
    assert!(texts("It is 4 eu").is_empty());
    assert_eq!(texts("Tomorrow in Oslo: 4 °C, light"), ["4 °C"]);
    assert_eq!(texts("It is 4.\n"), ["4"]);
    assert_eq!(texts("Costs €80,00 and"), ["€80,00"]);
}

#[test]
fn the_settled_figures_of_every_prefix_begin_the_figures_of_the_whole_text() {
    let units = Units::default();
    for full in REAL_ANSWERS {
        let whole = figures(full, &units);
        for (cut, _) in full.char_indices().chain([(full.len(), ' ')]) {
            let prefix = &full[..cut];
            let settled = settled_figures(prefix, &units);
            let now = figures(prefix, &units);
            assert!(settled.len() <= now.len(), "{prefix:?}");
            assert_eq!(settled[..], now[..settled.len()], "{prefix:?}");
            assert!(settled.len() <= whole.len(), "{prefix:?}");
            assert_eq!(settled[..], whole[..settled.len()], "{prefix:?}");
        }
        assert!(!whole.is_empty(), "{full:?}");
    }
}

#[test]
fn every_figure_of_a_finished_answer_is_settled_once_a_line_break_follows() {
    let units = Units::default();
    for full in REAL_ANSWERS {
        let text = format!("{full}\n");
        assert_eq!(
            settled_figures(&text, &units),
            figures(&text, &units),
            "{full:?}"
        );
    }
}

fn assert_quick(text: &str) {
    let units = Units::default();
    let started = Instant::now();
    let all = figures(text, &units);
    let settled = settled_figures(text, &units);
    assert!(settled.len() <= all.len());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_mebibyte_of_digits_and_separators_is_read_quickly_without_panicking() {
    const MIB: usize = 1 << 20;
    let alphabet: Vec<char> = "0123456789.,' -−:/\u{a0}€°%kKx".chars().collect();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut random = String::new();
    while random.len() < MIB {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let i = usize::try_from(state % alphabet.len() as u64).unwrap_or(0);
        random.push(alphabet.get(i).copied().unwrap_or('0'));
    }
    assert_quick(&random);
    assert_quick(&"1234567890".repeat(MIB / 10));
    assert_quick(&format!("1{}x", " 234".repeat(MIB / 4)));
    assert_quick(&format!("1{}", ",234".repeat(MIB / 4)));
    assert_quick(&format!("22:30:00.{}", "0".repeat(MIB)));
    // Shorter, with a figure every two bytes (a quadratic rescan would still take hours).
    const QUARTER: usize = MIB / 4;
    assert_quick(&"1,".repeat(QUARTER / 2));
    assert_quick(&"1.".repeat(QUARTER / 2));
    assert_quick(&"1 ".repeat(QUARTER / 2));
    assert_quick(&"1-".repeat(QUARTER / 2));
    assert_quick(&"1:".repeat(QUARTER / 2));
    assert_quick(&"12.11.2026 ".repeat(QUARTER / 11));
    assert_quick(&"a1".repeat(QUARTER / 2));
}

#[test]
fn a_mebibyte_of_hyphens_and_dots_has_no_figures() {
    let text = "-.".repeat(1 << 19);
    assert!(figures(&text, &Units::default()).is_empty());
    let text = "−.".repeat(1 << 18);
    assert!(figures(&text, &Units::default()).is_empty());
    assert_quick(&"-.-5".repeat(1 << 16));
}
