//! Embeddings and retrieval end to end: `OpenAiEmbedder` against a local mock server (batches,
//! order by index, every failure typed), a `RetrievalTool` inside a ReAct run, and `KnnFewShot`
//! choosing demos by embeddings (compiled, called, saved, failing).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use signet::Error;
use signet::data::Example;
use signet::embed::{EmbedError, Embedder, FnEmbedder, OpenAiEmbedder, RetrievalTool, VectorIndex};
use signet::module::{Observation, Predict, Predictors, ReAct};
use signet::optimize::{KnnFewShot, OptimizeError};
use signet::testing::ScriptedLm;
use tokio::io::AsyncWriteExt;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::raw_http;
use crate::support;
use support::*;

const API_KEY: &str = "sk-embed-key-never-shown";

fn embedder(base_url: &str) -> signet::embed::OpenAiEmbedderBuilder {
    OpenAiEmbedder::builder("embed-model")
        .base_url(base_url)
        .api_key(API_KEY)
        .timeout(Duration::from_secs(10))
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|t| (*t).to_owned()).collect()
}

/// A mock server's reply to an embeddings request: for each input `t`, the vector
/// `[len(t), 1]`, listed in reverse order with their `index`.
fn by_length(request: &Request) -> ResponseTemplate {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    let inputs = body["input"].as_array().cloned().unwrap_or_default();
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let length = t.as_str().map_or(0, str::len);
            json!({"object": "embedding", "index": i, "embedding": [length as f64, 1.0]})
        })
        .collect();
    data.reverse();
    ResponseTemplate::new(200)
        .set_body_json(json!({"object": "list", "data": data, "model": "embed-model"}))
}

#[tokio::test]
async fn vectors_come_back_in_the_order_of_the_texts_in_batches_of_the_batch_size() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header(
            "authorization",
            format!("Bearer {API_KEY}").as_str(),
        ))
        .respond_with(by_length)
        .expect(3)
        .mount(&server)
        .await;
    let client = embedder(&format!("{}/v1", server.uri()))
        .batch_size(2)
        .dimensions(2)
        .build()
        .unwrap();
    let vectors = client
        .embed(&texts(&["a", "bb", "ccc", "dddd", "eeeee"]))
        .await
        .unwrap();
    let lengths: Vec<f32> = vectors.iter().map(|v| v[0]).collect();
    assert_eq!(lengths, [1.0, 2.0, 3.0, 4.0, 5.0]);
    let sent = bodies(&server).await;
    let inputs: Vec<&Value> = sent.iter().map(|b| &b["input"]).collect();
    assert_eq!(
        inputs,
        [
            &json!(["a", "bb"]),
            &json!(["ccc", "dddd"]),
            &json!(["eeeee"])
        ]
    );
    assert_eq!(sent[0]["model"], "embed-model");
    assert_eq!(sent[0]["dimensions"], 2);
    assert_eq!(sent[0]["encoding_format"], "float");
    // No texts, no request.
    assert!(client.embed(&[]).await.unwrap().is_empty());
}

/// The error a mock server that answers `reply` makes.
async fn failure(reply: ResponseTemplate) -> EmbedError {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(reply)
        .mount(&server)
        .await;
    let client = embedder(&format!("{}/v1", server.uri())).build().unwrap();
    client.embed(&texts(&["one", "two"])).await.unwrap_err()
}

#[tokio::test]
async fn a_rate_limit_keeps_its_retry_after_and_is_transient() {
    let error = failure(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "7")
            .set_body_json(json!({"error": {"message": "slow down", "type": "rate_limit"}})),
    )
    .await;
    assert_eq!(
        error,
        EmbedError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            message: "slow down".into()
        }
    );
    assert!(error.is_transient());
}

#[tokio::test]
async fn a_server_error_names_its_status_and_never_the_key() {
    let error = failure(
        ResponseTemplate::new(500)
            .set_body_json(json!({"error": {"message": format!("boom for key {API_KEY}")}})),
    )
    .await;
    assert_eq!(
        error,
        EmbedError::Http {
            status: 500,
            message: "boom for key [redacted]".into()
        }
    );
    assert!(error.is_transient());
    let error = failure(ResponseTemplate::new(400).set_body_string("")).await;
    assert_eq!(
        error,
        EmbedError::Http {
            status: 400,
            message: "HTTP 400 with an empty body".into()
        }
    );
    assert!(!error.is_transient());
}

#[tokio::test]
async fn a_reply_with_the_wrong_number_of_vectors_is_refused() {
    let one = json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}]});
    let error = failure(ResponseTemplate::new(200).set_body_json(one)).await;
    assert_eq!(
        error,
        EmbedError::WrongCount {
            expected: 2,
            got: 1
        }
    );
}

#[tokio::test]
async fn vectors_of_unequal_length_or_with_text_in_them_are_refused() {
    let unequal =
        json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0]}]});
    let error = failure(ResponseTemplate::new(200).set_body_json(unequal)).await;
    assert_eq!(
        error,
        EmbedError::UnequalDimensions {
            index: 1,
            expected: 2,
            got: 1
        }
    );
    let text = json!({"data": [{"index": 0, "embedding": [1.0, "x"]}, {"index": 1, "embedding": [1.0, 2.0]}]});
    let error = failure(ResponseTemplate::new(200).set_body_json(text)).await;
    assert_eq!(
        error,
        EmbedError::NotFinite {
            index: 0,
            position: 1
        }
    );
    let empty = json!({"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": []}]});
    let error = failure(ResponseTemplate::new(200).set_body_json(empty)).await;
    assert_eq!(error, EmbedError::EmptyVector { index: 0 });
}

#[tokio::test]
async fn a_body_that_is_not_json_is_malformed() {
    let error = failure(ResponseTemplate::new(200).set_body_string("{\"data\": [")).await;
    match error {
        EmbedError::Malformed { message } => {
            assert!(
                message.starts_with("the body is not valid JSON"),
                "{message}"
            )
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_reply_past_the_size_limit_is_refused_not_read() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(by_length)
        .mount(&server)
        .await;
    let client = embedder(&format!("{}/v1", server.uri()))
        .max_response_bytes(64)
        .build()
        .unwrap();
    let error = client.embed(&texts(&["one", "two"])).await.unwrap_err();
    assert_eq!(error, EmbedError::ResponseTooLarge { limit: 64 });
}

#[tokio::test]
async fn a_body_cut_short_is_a_transport_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        if let Ok((mut socket, _)) = listener.accept().await {
            raw_http::read_request(&mut socket).await;
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n";
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket
                .write_all(br#"{"data": [{"index": 0, "embedding": [0.1, "#)
                .await;
            let _ = socket.shutdown().await;
        }
    });
    let client = embedder(&format!("http://{address}/v1")).build().unwrap();
    let error = client.embed(&texts(&["one"])).await.unwrap_err();
    assert!(matches!(error, EmbedError::Transport { .. }), "{error:?}");
    assert!(error.is_transient());
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let client = embedder(&format!("http://{address}/v1")).build().unwrap();
    let error = client.embed(&texts(&["one"])).await.unwrap_err();
    assert!(matches!(error, EmbedError::Transport { .. }), "{error:?}");
}

/// Bag of words over a small vocabulary: one dimension per topic.
fn topics() -> FnEmbedder {
    const TOPICS: [&[&str]; 3] = [
        &["rain", "weather", "sunny", "forecast", "umbrella"],
        &["eur", "nok", "price", "kroner", "cost"],
        &["ibsen", "play", "wrote", "novel", "author"],
    ];
    FnEmbedder::new("topics", |texts: &[String]| {
        Ok::<_, String>(
            texts
                .iter()
                .map(|text| {
                    let words: Vec<String> = text
                        .to_lowercase()
                        .split(|c: char| !c.is_alphanumeric())
                        .map(str::to_owned)
                        .collect();
                    TOPICS
                        .iter()
                        .map(|topic| {
                            words.iter().filter(|w| topic.contains(&w.as_str())).count() as f32
                        })
                        .collect()
                })
                .collect(),
        )
    })
}

const PASSAGES: [&str; 4] = [
    "Bergen has rain on most days; take an umbrella.",
    "A coffee in Oslo costs about 50 kroner (NOK).",
    "Ibsen wrote the play Peer Gynt in 1867.",
    "Seville is sunny most of the year.",
];

#[tokio::test]
async fn a_react_agent_searches_the_index_and_answers_from_what_it_found() {
    let mut index = VectorIndex::new(topics());
    index.add(PASSAGES).await.unwrap();
    let search = RetrievalTool::new(Arc::new(index), 1);
    let lm = Arc::new(ScriptedLm::texts([
        step(
            "I should look it up",
            "search",
            json!({"query": "who wrote Peer Gynt?"}),
        ),
        step("I know now", "finish", json!({})),
        extract("Ibsen"),
    ]));
    let agent = ReAct::<Ask>::new()
        .tools(vec![Arc::new(search)])
        .with_lm(lm.clone());
    let out = agent
        .call(AskInput {
            question: "Who wrote Peer Gynt?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "Ibsen");
    assert_eq!(
        out.trajectory.steps[0].observation,
        Observation::Output(json!(["Ibsen wrote the play Peer Gynt in 1867."]))
    );
    // The model was offered the tool, and saw the passage in its next prompt.
    let first = &lm.requests()[0].messages[0].content;
    assert!(first.contains("search"), "{first}");
    let second = &lm.requests()[1].messages[1].content;
    assert!(
        second.contains("Ibsen wrote the play Peer Gynt in 1867."),
        "{second}"
    );
}

#[tokio::test]
async fn an_embedder_failure_in_the_tool_is_an_observation_the_agent_sees() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    // Works for the corpus, then goes down.
    let flaky = FnEmbedder::new("flaky", move |texts: &[String]| {
        if counter.fetch_add(1, Ordering::SeqCst) == 0 {
            Ok(vec![vec![1.0, 0.0]; texts.len()])
        } else {
            Err("the model server is down")
        }
    });
    let mut index = VectorIndex::new(flaky);
    index.add(PASSAGES).await.unwrap();
    let agent = ReAct::<Ask>::new()
        .tools(vec![Arc::new(RetrievalTool::new(Arc::new(index), 2))])
        .with_lm(Arc::new(ScriptedLm::texts([
            step("look it up", "search", json!({"query": "Peer Gynt"})),
            step("give up", "finish", json!({})),
            extract("unknown"),
        ])));
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(
        out.trajectory.steps[0].observation.as_text(),
        "Execution error in search: tool `search` failed: the embedding function failed: the model server is down"
    );
}

#[tokio::test]
async fn the_index_and_the_tool_work_over_the_http_embedder() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(by_length)
        .mount(&server)
        .await;
    let client = embedder(&format!("{}/v1", server.uri())).build().unwrap();
    let mut index = VectorIndex::new(client);
    index
        .add([
            signet::embed::Document::new("x").with_metadata(json!({"id": "short"})),
            signet::embed::Document::new("a much longer passage"),
        ])
        .await
        .unwrap();
    let tool = RetrievalTool::new(Arc::new(index), 1).detailed(true);
    use signet::Tool;
    let found = tool.call(json!({"query": "y"})).await.unwrap();
    assert_eq!(found[0]["index"], 0);
    assert_eq!(found[0]["metadata"], json!({"id": "short"}));
    assert_eq!(found[0]["text"], "x");
}

fn train() -> Vec<Example> {
    [
        ("How much is a coffee in NOK?", "50 NOK"),
        ("What is the weather forecast for Bergen?", "rain"),
        ("Who wrote Peer Gynt?", "Ibsen"),
    ]
    .iter()
    .map(|(q, a)| Example::new(json!({"question": q, "answer": a})).with_inputs(["question"]))
    .collect()
}

fn ask_about(question: &str) -> AskInput {
    AskInput {
        question: question.into(),
    }
}

#[tokio::test]
async fn knn_few_shot_with_an_embedder_shows_each_call_the_demo_nearest_by_embedding() {
    let embedded = Arc::new(AtomicUsize::new(0));
    let counter = embedded.clone();
    let counting = FnEmbedder::new("topics", move |texts: &[String]| {
        counter.fetch_add(texts.len(), Ordering::SeqCst);
        let inner = topics();
        futures::executor::block_on(inner.embed(texts)).map_err(|e| e.to_string())
    });
    let lm = Arc::new(ScriptedLm::texts([answer_reply("ok"), answer_reply("ok")]));
    let student = Predict::<Ask>::new().with_lm(lm.clone());
    let compiled = KnnFewShot::new(1)
        .with_embedder(counting)
        .compile(&student, &train())
        .await
        .unwrap();
    assert_eq!(
        compiled.report.to_string(),
        "3 demos in self; each call shows the 1 nearest on question (by topics embeddings)"
    );
    // The training examples were embedded when compiling.
    assert_eq!(embedded.load(Ordering::SeqCst), 3);
    let program = compiled.program;
    // No word in common with the money demo but "price" and "kroner": embeddings see the topic.
    program
        .call(ask_about("What is the price in kroner of a beer?"))
        .await
        .unwrap();
    program
        .call(ask_about("Is an umbrella needed in Oslo?"))
        .await
        .unwrap();
    assert_eq!(embedded.load(Ordering::SeqCst), 5, "one embedding per call");
    let prompts: Vec<String> = lm
        .requests()
        .iter()
        .map(|r| r.messages.iter().map(|m| m.content.as_str()).collect())
        .collect();
    assert!(
        prompts[0].contains("How much is a coffee in NOK?"),
        "{}",
        prompts[0]
    );
    assert!(!prompts[0].contains("Peer Gynt"), "{}", prompts[0]);
    assert!(
        prompts[1].contains("weather forecast for Bergen"),
        "{}",
        prompts[1]
    );
    assert!(!prompts[1].contains("coffee"), "{}", prompts[1]);

    // Saved: the setting says it was by embeddings; loaded, the pool and k come back.
    let text = program.to_saved_json();
    let saved: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        saved["demo_selection"],
        json!({"nearest": 1, "keys": ["question"], "embedding": "topics"})
    );
    let mut loaded = Predict::<Ask>::new();
    loaded.load_json(&text).unwrap();
    assert_eq!(loaded.predictor().demos().len(), 3);
    assert!(loaded.predictor().demo_selector().is_some());
}

#[tokio::test]
async fn an_embedder_that_fails_fails_the_compile_or_the_call_with_a_typed_error() {
    let down = || FnEmbedder::new("down", |_: &[String]| Err::<Vec<Vec<f32>>, _>("offline"));
    let student = Predict::<Ask>::new().with_lm(Arc::new(ScriptedLm::texts([answer_reply("ok")])));
    let error = KnnFewShot::new(1)
        .with_embedder(down())
        .compile(&student, &train())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OptimizeError::Embed(EmbedError::Function { message }) if message == "offline"),
        "{error:?}"
    );
    // compile_blocking embeds nothing: the first call does, and fails.
    let compiled = KnnFewShot::new(1)
        .with_embedder(down())
        .compile_blocking(&student, &train())
        .unwrap();
    let error = compiled
        .program
        .call(ask_about("Who wrote it?"))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        Error::Embed(EmbedError::Function {
            message: "offline".into()
        })
    );
    assert_eq!(
        error.to_string(),
        "the demos could not be selected: the embedding function failed: offline"
    );
    assert!(!error.is_retryable());
    let limited = Error::Embed(EmbedError::RateLimited {
        retry_after: None,
        message: "slow down".into(),
    });
    assert!(limited.is_retryable());
}

#[tokio::test]
async fn a_react_run_embeds_its_question_once_and_its_extract_shows_the_nearest_demo() {
    let embedded = Arc::new(AtomicUsize::new(0));
    let counter = embedded.clone();
    let counting = FnEmbedder::new("topics", move |texts: &[String]| {
        counter.fetch_add(texts.len(), Ordering::SeqCst);
        futures::executor::block_on(topics().embed(texts)).map_err(|e| e.to_string())
    });
    let lm = Arc::new(ScriptedLm::texts([
        step("add them", "add", json!({"a": 1, "b": 2})),
        step("done", "finish", json!({})),
        extract("3"),
    ]));
    let agent = ReAct::<Ask>::new()
        .tools(vec![Arc::new(AddTool)])
        .with_lm(lm.clone());
    let compiled = KnnFewShot::new(1)
        .with_embedder(counting)
        .compile(&agent, &train())
        .await
        .unwrap();
    assert_eq!(compiled.report.predictors, ["react", "extract.predict"]);
    compiled
        .program
        .call(ask_about("Which author wrote the novel?"))
        .await
        .unwrap();
    // The pool once when compiling, the question once for the run (not once per step).
    assert_eq!(embedded.load(Ordering::SeqCst), 4);
    // Text-mode steps show no question-and-answer demo (it has none of a step's outputs); the
    // extract shows the nearest one, and no step shows another.
    let prompts: Vec<String> = lm
        .requests()
        .iter()
        .map(|r| r.messages.iter().map(|m| m.content.as_str()).collect())
        .collect();
    assert!(
        prompts[2].contains("Who wrote Peer Gynt?"),
        "{}",
        prompts[2]
    );
    for prompt in &prompts {
        assert!(
            !prompt.contains("coffee") && !prompt.contains("forecast for"),
            "{prompt}"
        );
    }
}
