//! [`majority`]: the most common answer among several completions (DSPy's `dspy.majority`).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use super::normalize_text;

/// The first of `completions` whose `field` (default: the last field of the serialized output)
/// holds the most common value, compared after DSPy's [`normalize_text`]; values that normalize
/// to nothing are not counted unless all do. Ties go to the value seen first (DSPy's
/// `dspy.majority`). `None` when there are no completions.
///
/// ```
/// use signet::evaluate::majority;
/// # #[derive(serde::Serialize)]
/// # struct Out { reasoning: &'static str, answer: &'static str }
/// let outs = [
///     Out { reasoning: "a", answer: "Paris" },
///     Out { reasoning: "b", answer: "Lyon" },
///     Out { reasoning: "c", answer: "paris." },
/// ];
/// assert_eq!(majority(&outs, None).unwrap().reasoning, "a");
/// ```
pub fn majority<'a, T: Serialize>(completions: &'a [T], field: Option<&str>) -> Option<&'a T> {
    let value = |completion: &T| -> Option<String> {
        let Ok(Value::Object(fields)) = serde_json::to_value(completion) else {
            return None;
        };
        let value = match field {
            Some(name) => fields.get(name)?.clone(),
            None => fields.values().next_back()?.clone(),
        };
        let normalized = normalize_text(&crate::python::py_str(&value));
        (!normalized.is_empty()).then_some(normalized)
    };
    majority_by(completions, value)
}

/// [`majority`] with your own reading of each completion: `key` returns the value to count
/// (already normalized), or `None` for one not to count unless none counts.
///
/// ```
/// use signet::evaluate::majority_by;
/// let votes = ["B", "a", "b", "A", "b"];
/// assert_eq!(majority_by(&votes, |v| Some(v.to_lowercase())), Some(&"B"));
/// ```
pub fn majority_by<T>(completions: &[T], key: impl Fn(&T) -> Option<String>) -> Option<&T> {
    let keys: Vec<Option<String>> = completions.iter().map(key).collect();
    let counted: Vec<&Option<String>> = if keys.iter().any(Option::is_some) {
        keys.iter().filter(|k| k.is_some()).collect()
    } else {
        keys.iter().collect()
    };
    // Counts in first-seen order, so that a tie goes to the value seen first; the map finds a
    // value's count in constant time, however many distinct answers there are.
    let mut counts: Vec<(&Option<String>, usize)> = Vec::new();
    let mut position: HashMap<&Option<String>, usize> = HashMap::new();
    for key in counted {
        match position.get(key) {
            Some(&i) => counts[i].1 += 1,
            None => {
                position.insert(key, counts.len());
                counts.push((key, 1));
            }
        }
    }
    let best = counts
        .iter()
        .fold(
            None::<(&Option<String>, usize)>,
            |best, &(k, n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((k, n)),
            },
        )?
        .0;
    completions
        .iter()
        .zip(&keys)
        .find(|(_, k)| *k == best)
        .map(|(c, _)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tie_goes_to_the_value_seen_first_and_empty_values_do_not_count() {
        let votes = ["", "x", "y", "", ""];
        assert_eq!(
            majority_by(&votes, |v| (!v.is_empty()).then(|| v.to_string())),
            Some(&"x")
        );
        let empty: [&str; 0] = [];
        assert_eq!(majority_by(&empty, |v| Some(v.to_string())), None);
        // Nothing counts: the values are all `None`, the first completion wins.
        assert_eq!(majority_by(&votes[..1], |_| None), Some(&""));
    }

    #[test]
    fn many_distinct_answers_are_counted_in_one_pass() {
        // 200,000 answers, all distinct but the last two: a quadratic count would not finish.
        let mut votes: Vec<String> = (0..200_000).map(|i| i.to_string()).collect();
        votes.push("7".into());
        assert_eq!(
            majority_by(&votes, |v| Some(v.clone())),
            Some(&"7".to_owned())
        );
    }
}
