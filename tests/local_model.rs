//! End to end on a real model: SmolLM2-135M-Instruct served by llama.cpp's server (the PyPI wheel
//! `xllamacpp`) on this machine (installed into the cache by `signet_local` on first use; `.ci/run`
//! installs it first).
//!
//! These tests assert what the framework guarantees — valid, typed outputs and complete
//! trajectories, streaming, typed errors — not the tiny model's knowledge or judgement.
//! They run one at a time (one model server each) so that they do not compete for the CPU.

use std::sync::Arc;

use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use signet::adapter::JsonAdapter;
use signet::lm::{Lm, LmError, LmOptions, LmRequest, Message, StreamEvent, ToolChoice};
use signet::module::{CallConfig, Limits, Observation, Predict, ReAct, ReActEvent, ReActMode};
use signet::{Signature, Tool, tool};
use signet_local::{ChatTemplate, LlamaCpp, LocalServer, ServerCommand, XLLAMACPP_VERSION};
use tokio::sync::{Mutex, MutexGuard};

static ONE_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// A model server for one test, and the lock that keeps the other tests waiting.
async fn serve(model: LlamaCpp) -> (LocalServer, Arc<dyn Lm>, MutexGuard<'static, ()>) {
    let guard = ONE_AT_A_TIME.lock().await;
    let server = model
        .serve()
        .await
        .unwrap_or_else(|e| panic!("the local model server must start: {e}"));
    let lm = model.lm(&server).expect("an LM client");
    (server, lm, guard)
}

/// The model with no prompt restored from an earlier server: the tests that judge a reply start
/// cold, since a restored prefix (its KV cache evaluated in other batches) can change a greedy
/// reply, and a test must not depend on what ran before it.
fn cold() -> LlamaCpp {
    LlamaCpp::smollm2().prompt_cache(false)
}

fn greedy(max_tokens: u32) -> LmOptions {
    LmOptions {
        temperature: Some(0.0),
        max_tokens: Some(max_tokens),
        ..LmOptions::default()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Sentiment {
    Positive,
    Negative,
    Neutral,
}

/// Classify the sentiment of the review.
#[derive(Signature)]
struct Classify {
    #[input]
    review: String,
    #[output]
    sentiment: Sentiment,
    /// How many stars (1 to 5) the reviewer would give.
    #[output]
    stars: u8,
}

#[tokio::test]
async fn predict_with_constrained_json_returns_a_typed_value() {
    let (server, lm, _guard) = serve(cold()).await;
    let predict = Predict::<Classify>::new()
        .with_lm(lm)
        .with_adapter(JsonAdapter::constrained())
        .with_options(greedy(200));
    let (output, prediction) = predict
        .call_full(
            ClassifyInput {
                review: "Great coffee, friendly staff, I will come back!".into(),
            },
            &CallConfig::default(),
        )
        .await
        .expect("a constrained reply always parses into the output type");
    // Typed: the enum and the integer deserialized.
    assert!(matches!(
        output.sentiment,
        Sentiment::Positive | Sentiment::Negative | Sentiment::Neutral
    ));
    let _: u8 = output.stars;
    assert_eq!(prediction.usage.lm_calls, 1);
    assert_eq!(
        prediction.usage.adapter_fallbacks, 0,
        "the constraint makes fallbacks unnecessary"
    );
    assert!(prediction.usage.prompt_tokens > 0 && prediction.usage.completion_tokens > 0);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn best_of_n_samples_attempts_the_server_accepts_and_keeps_the_best() {
    let (server, lm, _guard) = serve(cold()).await;
    let predict = Predict::<Classify>::new()
        .with_lm(lm)
        .with_adapter(JsonAdapter::constrained())
        .with_options(greedy(200));
    // An unreachable threshold: every attempt is made, each at temperature 1.0 with its own
    // rollout id (never sent: the server would reject nothing, but sees plain requests).
    let best = signet::module::BestOfN::new(
        predict,
        3,
        |_: &ClassifyInput, out: &ClassifyOutput| f64::from(out.stars.min(5)),
        10.0,
    );
    let run = best
        .call_full(ClassifyInput {
            review: "The soup was cold and the waiter ignored us.".into(),
        })
        .await
        .expect("constrained attempts always parse");
    assert_eq!(run.attempts.len(), 3);
    let rewards: Vec<f64> = run
        .attempts
        .iter()
        .map(|a| *a.reward.as_ref().expect("every attempt is scored"))
        .collect();
    let highest = rewards.iter().cloned().fold(f64::MIN, f64::max);
    assert_eq!(run.reward, highest, "the best attempt is kept: {rewards:?}");
    let rollouts: Vec<u64> = run.attempts.iter().map(|a| a.rollout_id).collect();
    assert_eq!(rollouts, [0, 1, 2]);
    assert_eq!(run.usage.lm_calls, 3);
    server.stop().await.unwrap();
}

/// Answer the question using the tools.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Count the words in a text.
#[tool]
fn word_count(text: String) -> usize {
    text.split_whitespace().count()
}

/// Add two integers.
#[tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::test]
async fn a_react_run_calls_real_tools_and_ends_with_a_typed_answer() {
    let (server, lm, _guard) = serve(cold()).await;
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(WordCountTool), Arc::new(AddTool)];
    // DSPy's text loop, each step constrained to a real tool and its arguments.
    let agent = ReAct::<Ask>::new()
        .tools(tools)
        .with_lm(lm)
        .with_adapter(JsonAdapter::constrained())
        .with_mode(ReActMode::Text)
        .with_limits(Limits::default().max_iters(3))
        .with_options(greedy(200));
    let events: Vec<ReActEvent<AskOutput>> = agent
        .stream(AskInput {
            question: "How many words are in the text 'the quick brown fox jumps'?".into(),
        })
        .collect()
        .await;
    let Some(ReActEvent::Done { output, usage, .. }) = events.last() else {
        panic!("the run must end with a typed answer: {events:?}");
    };
    assert!(
        usage.lm_calls >= 2,
        "steps and (unless finish carried it) the extractor"
    );

    // Every step is valid: a known tool, arguments that passed validation.
    let mut started = 0;
    let mut tool_outputs = 0;
    for event in &events {
        match event {
            ReActEvent::ToolCallStarted { name, .. } => {
                started += 1;
                assert!(
                    ["word_count", "add", "finish"].contains(&name.as_str()),
                    "unknown tool {name}"
                );
            }
            ReActEvent::ToolCallFinished {
                name, observation, ..
            } => match observation {
                Observation::Output(_) => tool_outputs += usize::from(name != "finish"),
                Observation::Error(text) => {
                    panic!("a constrained step produced a failing call: {text}")
                }
                Observation::Truncated { .. } => tool_outputs += 1,
            },
            _ => {}
        }
    }
    assert!(started >= 1, "at least one step");
    // The answer is a string (possibly empty: the model is tiny); what matters is that it typed.
    let _: &String = &output.answer;
    println!("steps: {started}, tool outputs: {tool_outputs}, answer: {output:?}");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn streaming_delivers_text_in_pieces_that_add_up_to_the_completion() {
    let (server, lm, _guard) = serve(cold()).await;
    let mut request = LmRequest::new(vec![Message::user("Write one sentence about the sea.")]);
    request.options = greedy(40);
    let events: Vec<StreamEvent> = lm
        .stream(&request)
        .map(|e| e.expect("no stream error"))
        .collect()
        .await;
    let pieces: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(pieces.len() > 1, "streamed in pieces: {pieces:?}");
    let Some(StreamEvent::Done(done)) = events.last() else {
        panic!("the stream must end with Done");
    };
    assert_eq!(done.text.as_deref(), Some(pieces.concat().as_str()));
    server.stop().await.unwrap();
}

/// Classifies a review (a program of one's own, streamed with `streamify`).
#[derive(signet::Module)]
struct Review {
    classify: Predict<Classify>,
}

impl signet::module::Module for Review {
    type Input = ClassifyInput;
    type Output = ClassifyOutput;
    type Error = signet::Error;

    async fn call(&self, input: ClassifyInput) -> Result<ClassifyOutput, signet::Error> {
        self.classify.call(input).await
    }
}

#[tokio::test]
async fn a_streamed_program_shows_each_field_as_the_real_model_writes_it() {
    use signet::module::{ModuleEvent, PredictorEvent, streamify};
    let (server, lm, _guard) = serve(cold()).await;
    let program = Review {
        classify: Predict::new()
            .with_lm(lm)
            .with_adapter(JsonAdapter::constrained())
            .with_options(greedy(200)),
    };
    let events: Vec<_> = streamify(
        &program,
        ClassifyInput {
            review: "The soup was cold and the waiter rude.".into(),
        },
    )
    .collect()
    .await;
    let mut written: std::collections::BTreeMap<String, String> = Default::default();
    for event in &events {
        if let ModuleEvent::Predictor {
            predictor,
            event: PredictorEvent::FieldDelta { field, text },
        } = event
        {
            assert_eq!(predictor, "classify");
            let field = field.clone().expect("the JSON reply's fields are named");
            written.entry(field).or_default().push_str(text);
        }
    }
    let Some(ModuleEvent::Done { output, usage, .. }) = events.last() else {
        panic!("the stream ends with the typed output: {events:?}");
    };
    // The pieces of each field are what the typed output holds.
    let sentiment = serde_json::to_value(&output.sentiment).unwrap();
    assert_eq!(
        written.get("sentiment").map(String::as_str),
        sentiment.as_str()
    );
    assert_eq!(written.get("stars"), Some(&output.stars.to_string()));
    assert_eq!(usage.lm_calls, 1);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_stopped_servers_prompt_is_restored_into_the_next_and_a_torn_one_is_not() {
    // A context size of its own: a saved prompt no other test writes.
    let model = LlamaCpp::smollm2().n_ctx(3000);
    let manifest = model.saved_prompt().unwrap();
    let _ = std::fs::remove_file(&manifest);
    let rules: String = (1..=60)
        .map(|i| {
            format!(
                "Rule {i}: a parcel of {i} kg costs {} NOK to send. ",
                40 + 3 * i
            )
        })
        .collect();
    let mut request = LmRequest::new(vec![
        Message::system(format!("You answer questions about parcel prices. {rules}")),
        Message::user("How much does a parcel of 7 kg cost?"),
    ]);
    request.options = greedy(12);

    let (server, lm, guard) = serve(model.clone()).await;
    let first = lm.complete(&request).await.unwrap();
    assert!(first.usage.prompt_tokens > 1000, "{:?}", first.usage);
    assert_eq!(
        first.usage.cached_prompt_tokens, 0,
        "a new server caches nothing"
    );
    server.stop().await.unwrap();
    drop(guard);
    assert!(manifest.is_file(), "stop saved the prompt");

    // The next server starts with the prompt evaluated: only what follows the cached prefix is
    // evaluated again, and the answer is the same.
    let (server, lm, guard) = serve(model.clone()).await;
    let second = lm.complete(&request).await.unwrap();
    assert!(
        second.usage.cached_prompt_tokens + 16 >= second.usage.prompt_tokens,
        "restored: {:?}",
        second.usage
    );
    assert_eq!(second.text, first.text);
    server.stop().await.unwrap();
    drop(guard);

    // A slot file cut short (llama.cpp aborts the server on one) is found out before the server
    // sees it: removed with a warning, and the server starts empty and answers.
    let saved: signet::serde_json::Value =
        signet::serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    let file = manifest.with_file_name(saved["file"].as_str().unwrap());
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let (server, lm, guard) = serve(model.clone()).await;
    assert!(
        !manifest.exists() && !file.exists(),
        "the torn file is removed"
    );
    let third = lm.complete(&request).await.unwrap();
    assert_eq!(third.usage.cached_prompt_tokens, 0);
    assert_eq!(third.text, first.text);
    server.stop().await.unwrap();
    drop(guard);

    // Off: nothing is restored or saved.
    std::fs::remove_file(&manifest).unwrap();
    let (server, _lm, guard) = serve(model.clone().prompt_cache(false)).await;
    server.stop().await.unwrap();
    drop(guard);
    assert!(!manifest.exists());
}

#[tokio::test]
async fn a_prompt_longer_than_the_context_is_a_typed_error() {
    let (server, lm, _guard) = serve(LlamaCpp::smollm2().n_ctx(512)).await;
    let request = LmRequest::new(vec![Message::user("word ".repeat(3000))]);
    let error = lm.complete(&request).await.unwrap_err();
    assert!(
        matches!(error, LmError::ContextWindowExceeded { .. }),
        "the server's 500 is recognised as a context overflow: {error:?}"
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_native_tool_call_round_trip_is_accepted_by_the_server() {
    let (server, lm, _guard) = serve(cold()).await;
    assert!(
        lm.capabilities().function_calling,
        "tool calls through the template"
    );
    // A forced tool choice: the reply is constrained to a call of `add`.
    let mut request = LmRequest::new(vec![Message::user("Add 2 and 3.")]);
    request.tools = vec![AddTool.definition(), WordCountTool.definition()];
    request.tool_choice = Some(ToolChoice::Function("add".into()));
    request.options = greedy(60);
    let completion = lm.complete(&request).await.expect("a tool call");
    let call = completion.tool_calls.first().expect("the forced call");
    assert_eq!(call.name, "add");
    assert!(!call.id.is_empty(), "the call has an id");
    // Its arguments are valid for the tool, so it runs.
    let result = AddTool
        .call(call.args().expect("JSON arguments"))
        .await
        .expect("valid arguments");

    // The follow-up carries the assistant's call and the tool's result with its id; the chat
    // template renders both and the model answers (or calls again).
    let mut follow_up = LmRequest::new(vec![
        Message::user("Add 2 and 3."),
        Message::assistant_tool_calls(completion.tool_calls.clone()),
        Message::tool_result(call.id.clone(), result.to_string()),
    ]);
    follow_up.tools = request.tools.clone();
    follow_up.options = greedy(30);
    let answer = lm
        .complete(&follow_up)
        .await
        .expect("the server accepts the round trip");
    assert!(answer.text.is_some() || !answer.tool_calls.is_empty());
    if let Some(next) = answer.tool_calls.first() {
        assert_eq!(
            next.id, "call_1",
            "ids are numbered through the conversation"
        );
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_native_react_run_makes_only_valid_calls() {
    let (server, lm, _guard) = serve(cold()).await;
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(WordCountTool), Arc::new(AddTool)];
    let agent = ReAct::<Ask>::new()
        .tools(tools)
        .with_lm(lm)
        .with_adapter(JsonAdapter::constrained())
        .with_mode(ReActMode::Native)
        .with_limits(Limits::default().max_iters(3))
        .with_options(greedy(200));
    let out = agent
        .call(AskInput {
            question: "What is 19 plus 23?".into(),
        })
        .await
        .expect("a native run on the real model ends with a typed answer");
    assert!(
        !out.trajectory.steps.is_empty(),
        "at least one call: {:?}",
        out
    );
    for step in &out.trajectory.steps {
        assert!(
            ["word_count", "add", "finish"].contains(&step.tool_name.as_str()),
            "a real tool: {step:?}"
        );
        assert!(
            !matches!(step.observation, Observation::Error(_)),
            "constrained calls pass validation: {step:?}"
        );
        assert!(step.call_id.is_some(), "native calls carry their id");
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn on_the_real_model_an_answer_comes_after_every_result_it_asked_for() {
    let (server, lm, _guard) = serve(cold()).await;
    let agent = |adapter: JsonAdapter| {
        let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(WordCountTool), Arc::new(AddTool)];
        ReAct::<Ask>::new()
            .tools(tools)
            .with_lm(lm.clone())
            .with_adapter(adapter)
            .with_mode(ReActMode::Native)
            .with_required_tool_calls(true)
            .with_limits(Limits::default().max_iters(4))
            .with_options(greedy(200))
    };
    let question = || AskInput {
        question: "Add 19 and 23, and count the words of 'to be or not to be'.".into(),
    };
    let in_turn = |steps: &[signet::module::Step], turn: usize| {
        steps.iter().filter(|s| s.turn == turn).count()
    };
    // Concurrent calls allowed: the `finish` that ended the run shares its turn with nothing.
    let out = agent(JsonAdapter::constrained())
        .call(question())
        .await
        .expect("a typed answer");
    let steps = &out.trajectory.steps;
    if let Some(last) = steps.last().filter(|s| s.tool_name == "finish") {
        assert_eq!(in_turn(steps, last.turn), 1, "{steps:#?}");
    }
    for step in steps.iter().filter(|s| s.tool_name == "finish") {
        let alone = in_turn(steps, step.turn) == 1;
        let completed = step.observation == Observation::Output(serde_json::json!("Completed."));
        assert_eq!(
            alone, completed,
            "only a finish alone in its turn completes: {step:?}"
        );
    }
    // One call a reply: the decoding schema allows no more.
    let out = agent(JsonAdapter::constrained().with_parallel_tool_calls(false))
        .call(question())
        .await
        .expect("a typed answer");
    let steps = &out.trajectory.steps;
    for step in steps {
        assert_eq!(in_turn(steps, step.turn), 1, "one call a turn: {steps:#?}");
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn predict_with_tools_runs_native_calls_on_the_real_model() {
    let (server, lm, _guard) = serve(cold()).await;
    let predict = Predict::<Ask>::new()
        .with_lm(lm.clone())
        .with_adapter(JsonAdapter::constrained())
        .tools(vec![Arc::new(AddTool) as Arc<dyn Tool>])
        .with_max_tool_turns(2)
        .with_options(greedy(120));
    // Whatever the tiny model decides, each round is a valid call or a typed answer; running out
    // of rounds is the one typed failure allowed.
    match predict
        .call(AskInput {
            question: "Use the add tool: what is 2 + 3?".into(),
        })
        .await
    {
        Ok(out) => {
            let _: &String = &out.answer;
        }
        Err(signet::module::Error::TooManyToolTurns { turns }) => assert_eq!(turns, 2),
        Err(other) => panic!("unexpected failure: {other}"),
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_models_own_template_makes_an_lm_without_native_tools() {
    let model = LlamaCpp::smollm2().chat_template(ChatTemplate::Model);
    let (server, lm, _guard) = serve(model).await;
    assert!(!lm.capabilities().function_calling);
    let mut request = LmRequest::new(vec![Message::user("Say hello.")]);
    request.options = greedy(10);
    assert!(lm.complete(&request).await.unwrap().text.is_some());
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_server_whose_parent_dies_stops_too() {
    let _guard = ONE_AT_A_TIME.lock().await;
    let installed = LlamaCpp::smollm2().install().await.expect("installed");
    let port = signet_local::free_port().unwrap();
    // The launcher runs under a shell that is then killed without a chance to clean up.
    let script = format!(
        "'{}' '{}' --model '{}' --alias smollm2 --port {port} --ctx 512 --threads 1 & wait",
        installed.python.display(),
        installed.launcher.display(),
        installed.model.display()
    );
    let server = LocalServer::spawn(ServerCommand::new("sh").args(["-c", &script]).port(port))
        .await
        .expect("the launcher starts under the shell");
    let base_url = server.base_url().to_owned();
    drop(server); // SIGKILL to the shell only
    let client = reqwest::Client::new();
    let mut stopped = false;
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        if client
            .get(format!("{base_url}/models"))
            .send()
            .await
            .is_err()
        {
            stopped = true;
            break;
        }
    }
    assert!(stopped, "the orphaned server must stop within 10 s");
}

#[tokio::test]
async fn an_interrupted_install_is_redone() {
    let _guard = ONE_AT_A_TIME.lock().await;
    let installed = LlamaCpp::smollm2().install().await.expect("installed");
    let cache = std::env::temp_dir().join(format!("signet-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    // An install cut off half-way: an environment without its ready marker. The model is linked
    // in so that only the server is installed again.
    let venv = cache.join(format!("xllamacpp-{XLLAMACPP_VERSION}"));
    std::fs::create_dir_all(&venv).unwrap();
    std::fs::write(venv.join("half-written"), "").unwrap();
    std::fs::create_dir_all(cache.join("models")).unwrap();
    std::fs::hard_link(
        &installed.model,
        cache
            .join("models")
            .join(installed.model.file_name().unwrap()),
    )
    .unwrap();
    let again = LlamaCpp::smollm2()
        .cache_dir(&cache)
        .install()
        .await
        .expect("the install is redone");
    assert!(
        !venv.join("half-written").exists(),
        "the broken environment was replaced"
    );
    assert!(venv.join(".signet-ready").exists());
    let imports = std::process::Command::new(&again.python)
        .args(["-c", "import xllamacpp"])
        .status()
        .unwrap();
    assert!(imports.success(), "the new environment has the server");
    std::fs::remove_dir_all(&cache).unwrap();
}

#[tokio::test]
async fn the_local_server_also_serves_embeddings_and_chat_keeps_working() {
    use signet::embed::{EmbedError, Embedder, RetrievalTool, VectorIndex};

    let model = LlamaCpp::smollm2().embeddings(true);
    let (server, lm, _guard) = serve(model.clone()).await;
    let embedder = model.embedder(&server).expect("an embedder client");
    let texts: Vec<String> = [
        "Bergen has rain on most days.",
        "A coffee in Oslo costs 50 kroner.",
        "Bergen has rain on most days.",
    ]
    .map(String::from)
    .to_vec();
    let vectors = embedder.embed(&texts).await.expect("vectors");
    // One unit vector of the model's width per text; the same text, the same vector.
    assert_eq!(vectors.len(), 3);
    assert!(vectors.iter().all(|v| v.len() == 576));
    let norm = vectors[1].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-3, "{norm}");
    assert_eq!(vectors[0], vectors[2]);

    // An index over the model, searched through the retrieval tool.
    let mut index = VectorIndex::new(embedder);
    index.add(texts[..2].to_vec()).await.expect("indexed");
    let found = RetrievalTool::new(Arc::new(index), 2)
        .call(serde_json::json!({"query": "Bergen has rain on most days."}))
        .await
        .expect("a search");
    assert_eq!(found[0], "Bergen has rain on most days.");

    // Chat on the same server.
    let mut request = LmRequest::new(vec![Message::user("Say hi")]);
    request.options = greedy(8);
    let reply = lm.complete(&request).await.expect("chat still answers");
    assert!(reply.text.is_some_and(|t| !t.is_empty()));
    server.stop().await.unwrap();

    // A server started without embeddings refuses them with a typed error.
    let plain = LlamaCpp::smollm2();
    let (server, _lm, _guard2) = {
        drop(_guard);
        serve(plain.clone()).await
    };
    let error = plain
        .embedder(&server)
        .unwrap()
        .embed(&texts[..1])
        .await
        .unwrap_err();
    assert!(
        matches!(error, EmbedError::Http { status: 501, .. }),
        "{error:?}"
    );
    server.stop().await.unwrap();
}

/// The clients of the local server's other wire formats (llama.cpp answers Anthropic's Messages
/// API on `/v1/messages` and OpenAI's Responses API on `/v1/responses` too): the same model.
///
/// One retry, at once: the server (cpp-httplib) now and then closes a kept-alive connection just
/// as the next request goes out on it, a `Connect` error any client retries.
fn other_wires(server: &LocalServer) -> [Arc<dyn Lm>; 2] {
    let root = server.base_url().trim_end_matches("/v1");
    let retry = signet::lm::RetryPolicy::none()
        .with_max_retries(1)
        .with_initial_backoff(std::time::Duration::ZERO);
    let anthropic = signet::lm::AnthropicLm::builder("smollm2")
        .base_url(root)
        .retry(retry)
        .build()
        .expect("an Anthropic client of the local server");
    let responses = signet::lm::OpenAiResponsesLm::builder("smollm2")
        .base_url(server.base_url())
        .retry(retry)
        .build()
        .expect("a Responses client of the local server");
    [Arc::new(anthropic), Arc::new(responses)]
}

#[tokio::test]
async fn messages_and_responses_on_the_real_server_answer_plain_streamed_and_after_tool_results() {
    let (server, _, _guard) = serve(cold().n_ctx(1024)).await;
    for lm in other_wires(&server) {
        one_wire_answers(lm.as_ref()).await;
    }
    server.stop().await.unwrap();
}

async fn one_wire_answers(lm: &dyn Lm) {
    let mut request = LmRequest::new(vec![
        Message::system("You are brief."),
        Message::user("Write one sentence about the sea."),
    ]);
    request.options = greedy(24);

    let plain = lm.complete(&request).await.expect("a reply");
    let text = plain.text.clone().expect("text");
    assert!(!text.trim().is_empty());
    assert!(plain.usage.prompt_tokens > 0 && plain.usage.completion_tokens > 0);
    assert!(plain.finish_reason.is_some());

    let events: Vec<StreamEvent> = lm
        .stream(&request)
        .map(|e| e.expect("no stream error"))
        .collect()
        .await;
    let pieces: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let Some(StreamEvent::Done(done)) = events.last() else {
        panic!("the stream must end with Done");
    };
    assert!(events.len() > 2, "streamed in pieces: {events:?}");
    assert_eq!(done.text.as_deref(), Some(pieces.as_str()));
    // The second call's prompt is the first's: the server says it read it from its cache.
    assert!(done.usage.cached_prompt_tokens > 0, "{:?}", done.usage);

    // A conversation with a tool call and its result in Anthropic's blocks is accepted.
    let call = signet::lm::ToolCall::new("toolu_1", "add", r#"{"a": 2, "b": 3}"#);
    let mut round_trip = LmRequest::new(vec![
        Message::user("What is 2 + 3?"),
        Message::assistant_tool_calls(vec![call]),
        Message::tool_result("toolu_1", "5"),
    ]);
    round_trip.options = greedy(16);
    let answered = lm
        .complete(&round_trip)
        .await
        .expect("the round trip is accepted");
    assert!(answered.text.is_some_and(|t| !t.trim().is_empty()));

    // A prompt longer than the context is the typed error on this wire too.
    let long = LmRequest::new(vec![Message::user("word ".repeat(3000))]);
    let error = lm.complete(&long).await.unwrap_err();
    assert!(
        matches!(error, LmError::ContextWindowExceeded { .. }),
        "{error:?}"
    );
}

/// Answer the question.
#[derive(Signature, Clone)]
struct QuickAsk {
    #[input]
    question: String,
    #[output]
    answer: String,
}

#[tokio::test]
async fn predict_chain_of_thought_and_a_text_react_agent_run_on_messages_and_responses() {
    let (server, _, _guard) = serve(cold()).await;
    for lm in other_wires(&server) {
        modules_run_on(lm).await;
    }
    server.stop().await.unwrap();
}

async fn modules_run_on(lm: Arc<dyn Lm>) {
    // Free text on this endpoint (the server drops response formats there): two demos show the
    // tiny model the Chat adapter's format.
    let demos = [
        QuickAsk {
            question: "What is the capital of Italy?".into(),
            answer: "Rome".into(),
        },
        QuickAsk {
            question: "What is the capital of Spain?".into(),
            answer: "Madrid".into(),
        },
    ];
    let question = || QuickAskInput {
        question: "What is the capital of France?".into(),
    };
    let predict = Predict::<QuickAsk>::new()
        .with_lm(lm.clone())
        .with_options(greedy(60))
        .with_demos(demos.clone())
        .expect("demos");
    let (output, prediction) = predict
        .call_full(question(), &CallConfig::default())
        .await
        .expect("Predict answers through /v1/messages");
    assert!(!output.answer.trim().is_empty());
    assert_eq!(prediction.usage.lm_calls, 1);
    let cot = signet::module::ChainOfThought::<QuickAsk>::new()
        .with_lm(lm.clone())
        .with_options(greedy(80))
        .with_demos(demos)
        .expect("demos");
    let reasoned = cot.call(question()).await.expect("ChainOfThought answers");
    assert!(!reasoned.output.answer.trim().is_empty());

    // DSPy's text loop, streamed, with one demo trajectory for the step predictor.
    let fields = |value: serde_json::Value| -> signet::adapter::Fields {
        serde_json::from_value(value).expect("demo fields")
    };
    let mut agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .with_mode(ReActMode::Text)
        .with_limits(Limits::default().max_iters(3))
        .with_options(greedy(120));
    for (name, predictor) in signet::module::Predictors::named_predictors_mut(&mut agent) {
        if name == "react" {
            predictor.set_demos(vec![
                fields(serde_json::json!({"question": "What is 4 + 4?", "trajectory": "",
                    "next_thought": "I add them.", "next_tool_name": "add",
                    "next_tool_args": {"a": 4, "b": 4}})),
                fields(serde_json::json!({"question": "What is 4 + 4?",
                    "trajectory": "[[ ## thought_0 ## ]]\nI add them.\n\n[[ ## tool_name_0 ## ]]\nadd\n\n[[ ## tool_args_0 ## ]]\n{\"a\": 4, \"b\": 4}\n\n[[ ## observation_0 ## ]]\n8",
                    "next_thought": "I have the sum.", "next_tool_name": "finish",
                    "next_tool_args": {"answer": "8"}})),
            ]);
        }
    }
    let events: Vec<ReActEvent<AskOutput>> = agent
        .stream(AskInput {
            question: "What is 2 + 3?".into(),
        })
        .collect()
        .await;
    let Some(ReActEvent::Done {
        output, trajectory, ..
    }) = events.last()
    else {
        panic!("the run must end with a typed answer: {events:?}");
    };
    assert!(!trajectory.steps.is_empty());
    assert!(
        trajectory
            .steps
            .iter()
            .all(|step| ["add", "finish"].contains(&step.tool_name.as_str())),
        "{trajectory:?}"
    );
    let _: &String = &output.answer;
}
