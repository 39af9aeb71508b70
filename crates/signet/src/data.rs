//! Data for evaluation and optimization: [`Example`]s (inputs plus labels) and [`Dataset`]s read
//! from JSONL, JSON or CSV, shuffled and split deterministically.
//!
//! ```
//! use signet::data::{Dataset, Example};
//! use serde_json::json;
//!
//! let data = Dataset::from_jsonl_str(
//!     "{\"question\": \"2 + 2?\", \"answer\": \"4\"}\n{\"question\": \"3 + 3?\", \"answer\": \"6\"}\n",
//!     &["question"],
//! ).unwrap();
//! assert_eq!(data.len(), 2);
//! assert_eq!(data[0].inputs()["question"], "2 + 2?");
//! assert_eq!(data[0].labels()["answer"], "4");
//! let (train, dev) = data.shuffled(7).split_at(1);
//! assert_eq!((train.len(), dev.len()), (1, 1));
//! ```

use std::ops::Index;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::adapter::Fields;
use crate::signature::Signature;

mod python_random;
pub(crate) use python_random::PyRandom;

/// One record: field values, some of them marked as the inputs a program receives; the others
/// are labels (the expected outputs, or anything a metric wants to see). DSPy's `dspy.Example`
/// with `with_inputs(..)`.
///
/// ```
/// use serde_json::json;
/// use signet::data::Example;
///
/// let example = Example::new(json!({"question": "Capital of France?", "answer": "Paris"}))
///     .with_inputs(["question"]);
/// assert_eq!(example.inputs().len(), 1);
/// assert_eq!(example.labels()["answer"], "Paris");
/// assert_eq!(example.get("answer"), Some(&json!("Paris")));
/// ```
///
/// Cloning an example is cheap (its values and input keys are shared, copied only when a clone
/// is changed): an evaluation keeps a copy in every result.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Example {
    #[serde(serialize_with = "serialize_shared")]
    values: Arc<Fields>,
    #[serde(skip)]
    input_keys: Arc<[String]>,
}

fn serialize_shared<S: serde::Serializer>(values: &Arc<Fields>, s: S) -> Result<S::Ok, S::Error> {
    values.as_ref().serialize(s)
}

impl Example {
    /// A record of these values (a JSON object; anything else gives an empty record), with no
    /// inputs marked yet.
    pub fn new(values: Value) -> Example {
        Example {
            values: Arc::new(match values {
                Value::Object(map) => map,
                _ => Map::new(),
            }),
            input_keys: Arc::new([]),
        }
    }

    /// A record of these field values.
    pub fn from_fields(values: Fields) -> Example {
        Example {
            values: Arc::new(values),
            input_keys: Arc::new([]),
        }
    }

    /// Marks `keys` as the inputs (the rest are labels).
    pub fn with_inputs<S: Into<String>>(mut self, keys: impl IntoIterator<Item = S>) -> Example {
        self.input_keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// A complete example of the signature `S` (its struct holds the inputs and the outputs): the
    /// inputs are `S`'s input fields, the labels its outputs.
    ///
    /// ```
    /// use signet::data::Example;
    /// # #[derive(signet::Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let example = Example::of(Ask { question: "2 + 2?".into(), answer: "4".into() }).unwrap();
    /// assert_eq!(example.inputs()["question"], "2 + 2?");
    /// assert_eq!(example.labels()["answer"], "4");
    /// ```
    pub fn of<S: Signature>(example: S) -> Result<Example, crate::error::Error> {
        let (input, output) = example.into_parts();
        let mut values = to_fields(&input)?;
        values.extend(to_fields(&output)?);
        Ok(Example::from_fields(values)
            .with_inputs(S::signature().inputs().iter().map(|f| f.name())))
    }

    /// The typed inputs of `S`, with no labels yet (add them with [`with_label`](Self::with_label)):
    /// for a partial label, such as only the answer of a signature that also outputs reasoning.
    pub fn for_input<S: Signature>(input: &S::Input) -> Result<Example, crate::error::Error> {
        Ok(Example::from_fields(to_fields(input)?)
            .with_inputs(S::signature().inputs().iter().map(|f| f.name())))
    }

    /// Adds (or replaces) a label.
    pub fn with_label(mut self, key: impl Into<String>, value: impl Into<Value>) -> Example {
        Arc::make_mut(&mut self.values).insert(key.into(), value.into());
        self
    }

    /// The value of `key`, input or label.
    pub fn get(&self, key: &str) -> Option<&Value> {
        // A few fields: comparing the keys is quicker than hashing one.
        if self.values.len() <= 8 {
            return (self.values.iter()).find_map(|(k, v)| (k == key).then_some(v));
        }
        self.values.get(key)
    }

    /// Every value, inputs and labels.
    pub fn values(&self) -> &Fields {
        &self.values
    }

    /// The keys marked as inputs.
    pub fn input_keys(&self) -> &[String] {
        &self.input_keys
    }

    /// The inputs (the values of the input keys).
    pub fn inputs(&self) -> Fields {
        self.entries(true)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The labels (every value that is not an input).
    pub fn labels(&self) -> Fields {
        self.entries(false)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The values whose key is an input key (`inputs`), or is not one.
    fn entries(&self, inputs: bool) -> impl Iterator<Item = (&String, &Value)> {
        (self.values.iter()).filter(move |(k, _)| self.input_keys.iter().any(|i| i == *k) == inputs)
    }

    /// The inputs as the typed input `T` (a signature's input struct).
    pub fn input_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, crate::error::Error> {
        // Read from the example's own values (no copy of the inputs first).
        let inputs = self.entries(true).map(|(k, v)| (k.as_str(), v));
        T::deserialize(serde::de::value::MapDeserializer::<_, serde_json::Error>::new(inputs))
            .map_err(|e| crate::error::Error::InputType { source: e.into() })
    }
}

fn to_fields<T: Serialize>(value: &T) -> Result<Fields, crate::error::Error> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(crate::error::Error::InputType {
            source: <serde_json::Error as serde::ser::Error>::custom(format!(
                "expected a struct of fields, got {other}"
            ))
            .into(),
        }),
        Err(e) => Err(crate::error::Error::InputType { source: e.into() }),
    }
}

/// Why a dataset could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be read.
    #[error("could not read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A record is not valid JSON, or not an object.
    #[error("{origin}: record {record} is not a JSON object: {message}")]
    Json {
        /// The file (or `string`).
        origin: String,
        /// The 1-based record (line, for JSONL) number.
        record: usize,
        /// What was wrong.
        message: String,
    },
    /// The CSV could not be read.
    #[error("{origin}: {source}")]
    Csv {
        /// The file (or `string`).
        origin: String,
        /// What the CSV reader reported (with the line).
        #[source]
        source: csv::Error,
    },
    /// An input key is missing from a record.
    #[error("{origin}: record {record} has no input `{key}`")]
    MissingInput {
        /// The file (or `string`).
        origin: String,
        /// The 1-based record number.
        record: usize,
        /// The missing key.
        key: String,
    },
}

/// Examples in order, with deterministic shuffles and splits.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dataset {
    examples: Vec<Example>,
}

impl Dataset {
    /// A dataset of these examples.
    pub fn new(examples: impl IntoIterator<Item = Example>) -> Dataset {
        Dataset {
            examples: examples.into_iter().collect(),
        }
    }

    /// Reads a JSON Lines file: one object per line (blank lines skipped), `inputs` marked as the
    /// inputs of every record, which must all have them.
    pub fn from_jsonl(path: impl AsRef<Path>, inputs: &[&str]) -> Result<Dataset, DataError> {
        let (origin, text) = read(path.as_ref())?;
        Dataset::parse_jsonl(&text, inputs, &origin)
    }

    /// [`from_jsonl`](Self::from_jsonl) on text.
    pub fn from_jsonl_str(text: &str, inputs: &[&str]) -> Result<Dataset, DataError> {
        Dataset::parse_jsonl(text, inputs, "string")
    }

    fn parse_jsonl(text: &str, inputs: &[&str], origin: &str) -> Result<Dataset, DataError> {
        let mut records = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            records.push((number + 1, object(line, origin, number + 1)?));
        }
        Dataset::with_inputs(records, inputs, origin)
    }

    /// Reads a JSON file holding an array of objects.
    pub fn from_json(path: impl AsRef<Path>, inputs: &[&str]) -> Result<Dataset, DataError> {
        let (origin, text) = read(path.as_ref())?;
        Dataset::parse_json(&text, inputs, &origin)
    }

    /// [`from_json`](Self::from_json) on text.
    pub fn from_json_str(text: &str, inputs: &[&str]) -> Result<Dataset, DataError> {
        Dataset::parse_json(text, inputs, "string")
    }

    fn parse_json(text: &str, inputs: &[&str], origin: &str) -> Result<Dataset, DataError> {
        let value: Value = serde_json::from_str(text).map_err(|e| DataError::Json {
            origin: origin.to_owned(),
            record: 0,
            message: e.to_string(),
        })?;
        let Value::Array(items) = value else {
            return Err(DataError::Json {
                origin: origin.to_owned(),
                record: 0,
                message: "the file must hold an array of objects".to_owned(),
            });
        };
        let mut records = Vec::new();
        for (index, item) in items.into_iter().enumerate() {
            match item {
                Value::Object(map) => records.push((index + 1, map)),
                other => {
                    return Err(DataError::Json {
                        origin: origin.to_owned(),
                        record: index + 1,
                        message: format!("found {other}"),
                    });
                }
            }
        }
        Dataset::with_inputs(records, inputs, origin)
    }

    /// Reads a CSV file with a header row; every value is a string.
    pub fn from_csv(path: impl AsRef<Path>, inputs: &[&str]) -> Result<Dataset, DataError> {
        let (origin, text) = read(path.as_ref())?;
        Dataset::parse_csv(&text, inputs, &origin)
    }

    /// [`from_csv`](Self::from_csv) on text.
    pub fn from_csv_str(text: &str, inputs: &[&str]) -> Result<Dataset, DataError> {
        Dataset::parse_csv(text, inputs, "string")
    }

    fn parse_csv(text: &str, inputs: &[&str], origin: &str) -> Result<Dataset, DataError> {
        let csv_error = |source| DataError::Csv {
            origin: origin.to_owned(),
            source,
        };
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let headers = reader.headers().map_err(csv_error)?.clone();
        let mut records = Vec::new();
        for (index, row) in reader.records().enumerate() {
            let row = row.map_err(csv_error)?;
            let map: Fields = headers
                .iter()
                .zip(row.iter())
                .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
                .collect();
            records.push((index + 1, map));
        }
        Dataset::with_inputs(records, inputs, origin)
    }

    fn with_inputs(
        records: Vec<(usize, Fields)>,
        inputs: &[&str],
        origin: &str,
    ) -> Result<Dataset, DataError> {
        let mut examples = Vec::with_capacity(records.len());
        for (record, values) in records {
            if let Some(key) = inputs.iter().find(|k| !values.contains_key(**k)) {
                return Err(DataError::MissingInput {
                    origin: origin.to_owned(),
                    record,
                    key: (*key).to_owned(),
                });
            }
            examples.push(Example::from_fields(values).with_inputs(inputs.iter().copied()));
        }
        Ok(Dataset { examples })
    }

    /// The examples.
    pub fn examples(&self) -> &[Example] {
        &self.examples
    }

    /// How many examples.
    pub fn len(&self) -> usize {
        self.examples.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.examples.is_empty()
    }

    /// The examples in an order decided by `seed` alone: the order Python's
    /// `random.Random(seed).shuffle(examples)` gives, so a split made in a DSPy script is the
    /// same split here.
    pub fn shuffled(&self, seed: u64) -> Dataset {
        let mut examples = self.examples.clone();
        PyRandom::new(seed as i64).shuffle(&mut examples);
        Dataset { examples }
    }

    /// The first `n` examples and the rest.
    pub fn split_at(&self, n: usize) -> (Dataset, Dataset) {
        let n = n.min(self.examples.len());
        (
            Dataset::new(self.examples[..n].iter().cloned()),
            Dataset::new(self.examples[n..].iter().cloned()),
        )
    }

    /// Train, dev and test sets in these proportions (fractions of the whole; rounded down for
    /// train and dev, the test set takes the rest).
    pub fn split(&self, train: f64, dev: f64) -> (Dataset, Dataset, Dataset) {
        let total = self.examples.len() as f64;
        let n_train = (total * train.clamp(0.0, 1.0)).floor() as usize;
        let n_dev = ((total * dev.clamp(0.0, 1.0)).floor() as usize).min(self.len() - n_train);
        let (train, rest) = self.split_at(n_train);
        let (dev, test) = rest.split_at(n_dev);
        (train, dev, test)
    }
}

/// A dataset is a slice of examples: `&dataset` goes wherever `&[Example]` does.
impl std::ops::Deref for Dataset {
    type Target = [Example];
    fn deref(&self) -> &[Example] {
        &self.examples
    }
}

impl AsRef<[Example]> for Dataset {
    fn as_ref(&self) -> &[Example] {
        &self.examples
    }
}

impl Index<usize> for Dataset {
    type Output = Example;
    fn index(&self, index: usize) -> &Example {
        &self.examples[index]
    }
}

impl FromIterator<Example> for Dataset {
    fn from_iter<I: IntoIterator<Item = Example>>(iter: I) -> Self {
        Dataset::new(iter)
    }
}

impl IntoIterator for Dataset {
    type Item = Example;
    type IntoIter = std::vec::IntoIter<Example>;
    fn into_iter(self) -> Self::IntoIter {
        self.examples.into_iter()
    }
}

impl<'a> IntoIterator for &'a Dataset {
    type Item = &'a Example;
    type IntoIter = std::slice::Iter<'a, Example>;
    fn into_iter(self) -> Self::IntoIter {
        self.examples.iter()
    }
}

fn read(path: &Path) -> Result<(String, String), DataError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| DataError::Io {
        path: origin.clone(),
        source,
    })?;
    Ok((origin, text))
}

fn object(line: &str, origin: &str, record: usize) -> Result<Fields, DataError> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(DataError::Json {
            origin: origin.to_owned(),
            record,
            message: format!("found {other}"),
        }),
        Err(e) => Err(DataError::Json {
            origin: origin.to_owned(),
            record,
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inputs_are_read_from_the_input_keys_alone() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Input {
            question: String,
            #[serde(default)]
            answer: Option<String>,
        }
        let example = Example::new(json!({"question": "2+2?", "answer": "4"}));
        // `answer` is a label: the input does not see it.
        let read: Input = example
            .clone()
            .with_inputs(["question"])
            .input_as()
            .unwrap();
        assert_eq!(
            read,
            Input {
                question: "2+2?".into(),
                answer: None
            }
        );
        let missing = example.clone().with_inputs(["answer"]).input_as::<Input>();
        assert!(
            missing.unwrap_err().to_string().contains("question"),
            "names the missing field"
        );
        let wrong = Example::new(json!({"question": 4})).with_inputs(["question"]);
        let error = wrong.input_as::<Input>().unwrap_err();
        assert!(
            matches!(error, crate::error::Error::InputType { .. }),
            "{error}"
        );
    }

    #[test]
    fn csv_and_json_read_the_same_records() {
        let csv = Dataset::from_csv_str("question,answer\n\"a, b?\",yes\nc?,no\n", &["question"])
            .unwrap();
        let json = Dataset::from_json_str(
            r#"[{"question": "a, b?", "answer": "yes"}, {"question": "c?", "answer": "no"}]"#,
            &["question"],
        )
        .unwrap();
        assert_eq!(csv, json);
        assert_eq!(csv[0].inputs()["question"], "a, b?");
    }

    #[test]
    fn bad_records_are_errors_that_say_where() {
        let err = Dataset::from_jsonl_str("{\"q\": 1}\n\nnot json\n", &["q"]).unwrap_err();
        assert!(matches!(err, DataError::Json { record: 3, .. }), "{err}");
        let err = Dataset::from_jsonl_str("{\"q\": 1}\n{\"a\": 2}\n", &["q"]).unwrap_err();
        assert!(
            matches!(&err, DataError::MissingInput { record: 2, key, .. } if key == "q"),
            "{err}"
        );
        let err = Dataset::from_json_str("{\"q\": 1}", &["q"]).unwrap_err();
        assert!(err.to_string().contains("array of objects"), "{err}");
        assert!(matches!(
            Dataset::from_jsonl("/no/such/file.jsonl", &[]).unwrap_err(),
            DataError::Io { .. }
        ));
    }

    #[test]
    fn shuffles_depend_on_the_seed_alone_and_splits_cover_everything() {
        let data: Dataset = (0..20)
            .map(|i| Example::new(json!({"i": i})).with_inputs(["i"]))
            .collect();
        assert_eq!(data.shuffled(3), data.shuffled(3));
        assert_ne!(data.shuffled(3), data.shuffled(4));
        let order: Vec<i64> = data
            .shuffled(3)
            .into_iter()
            .map(|e| e.get("i").unwrap().as_i64().unwrap())
            .collect();
        assert_ne!(order, (0..20).collect::<Vec<_>>());
        let (train, dev, test) = data.split(0.5, 0.25);
        assert_eq!((train.len(), dev.len(), test.len()), (10, 5, 5));
    }
}
