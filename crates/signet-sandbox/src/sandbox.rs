//! A run of model-written code ([`Sandbox::run`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Runtime, Value};

use crate::host::{HostFn, Printed, install_console, install_grant, json_text};
use crate::{Limits, SandboxError};

/// Where model-written JavaScript runs: a fresh QuickJS engine for each run, with the language's
/// own objects (`JSON`, `Math`, `Date`, arrays, strings, ..) and nothing of the host's: no file,
/// network, process or environment access, no module loading. The code reaches the host only
/// through the functions [granted](Sandbox::grant) to it, by name, and `console.log`. Each run
/// is bounded by [`Limits`]; past one it ends in its [`SandboxError`], and the process and the
/// next run are unaffected.
///
/// ```
/// use std::time::Duration;
/// use serde_json::json;
/// use signet_sandbox::{Limits, Sandbox, SandboxError};
///
/// let limits = Limits::default().with_time(Duration::from_millis(100));
/// let sandbox = Sandbox::new().with_limits(limits).grant("fahrenheit", |c| {
///     let c = c.as_f64().ok_or("a number of degrees Celsius")?;
///     Ok(json!(c * 9.0 / 5.0 + 32.0))
/// });
/// let run = sandbox.run("const f = fahrenheit(20); console.log('converted'); ({f})")?;
/// assert_eq!(run.value, json!({"f": 68})); // JSON numbers: 68.0 is written 68
/// assert_eq!(run.printed, "converted\n");
/// assert!(matches!(sandbox.run("while (true) {}"), Err(SandboxError::TimeLimit { .. })));
/// assert!(matches!(sandbox.run("require('fs')"), Err(SandboxError::Thrown { .. })));
/// # Ok::<(), SandboxError>(())
/// ```
#[derive(Clone, Default)]
pub struct Sandbox {
    limits: Limits,
    grants: Vec<(String, HostFn)>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("limits", &self.limits)
            .field("grants", &self.granted().collect::<Vec<_>>())
            .finish()
    }
}

/// What a run gave.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Execution {
    /// The value of the code's last statement, as JSON (`null` for `undefined` or a value JSON
    /// has no form for, such as a function).
    pub value: serde_json::Value,
    /// What the code printed with `console.log`, a line each.
    pub printed: String,
    /// Whether `printed` was cut at [`Limits::max_output_bytes`].
    pub printed_cut: bool,
    /// The steps it took (see [`Limits::max_steps`]).
    pub steps: u64,
    /// How long it took.
    pub elapsed: Duration,
}

impl Sandbox {
    /// A sandbox with the default [`Limits`] and nothing granted.
    pub fn new() -> Sandbox {
        Sandbox::default()
    }

    /// With `limits` for each run.
    pub fn with_limits(mut self, limits: Limits) -> Sandbox {
        self.limits = limits;
        self
    }

    /// The limits of each run.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Grants the code a function `name` (a global; a name that is not an identifier is reached
    /// as `globalThis[name]`): its one argument reaches `host` as JSON (`null` when none), the
    /// value `host` returns comes back to the code, and its `Err(message)` is thrown there as an
    /// `Error` whose message starts with the name. A later grant of the same name replaces it.
    pub fn grant(
        mut self,
        name: impl Into<String>,
        host: impl Fn(serde_json::Value) -> Result<serde_json::Value, String> + Send + Sync + 'static,
    ) -> Sandbox {
        let name = name.into();
        self.grants.retain(|(granted, _)| *granted != name);
        self.grants.push((name, Arc::new(host)));
        self
    }

    /// The names granted, in the order granted.
    pub fn granted(&self) -> impl Iterator<Item = &str> {
        self.grants.iter().map(|(name, _)| name.as_str())
    }

    /// Runs `code` (a script) in a fresh engine, on a thread of its own whose stack is larger
    /// than [`Limits::stack_bytes`] (so that the engine's own stack check, not the process,
    /// stops deep recursion, whatever thread calls); this call waits for it.
    pub fn run(&self, code: &str) -> Result<Execution, SandboxError> {
        std::thread::scope(|scope| {
            let run = self
                .thread()
                .spawn_scoped(scope, || self.run_here(code))
                .map_err(no_thread)?;
            run.join().map_err(|_| panicked())?
        })
    }

    /// The thread a run has to itself: its stack larger than the engine's limit.
    fn thread(&self) -> std::thread::Builder {
        std::thread::Builder::new()
            .name("signet-sandbox".into())
            .stack_size(self.limits.stack_bytes.saturating_add(THREAD_STACK_MARGIN))
    }

    /// The run itself, on the calling thread.
    fn run_here(&self, code: &str) -> Result<Execution, SandboxError> {
        let started = Instant::now();
        let engine = |error: rquickjs::Error| SandboxError::Engine(error.to_string());
        let runtime = Runtime::new().map_err(engine)?;
        runtime.set_memory_limit(self.limits.memory_bytes);
        runtime.set_max_stack_size(self.limits.stack_bytes);
        let steps = Arc::new(AtomicU64::new(0));
        let timed_out = Arc::new(AtomicBool::new(false));
        let (counted, late, limits) = (steps.clone(), timed_out.clone(), self.limits);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            if started.elapsed() > limits.time {
                late.store(true, Ordering::Relaxed);
                return true;
            }
            counted.fetch_add(1, Ordering::Relaxed) >= limits.max_steps
        })));
        let context = Context::full(&runtime).map_err(engine)?;
        let printed = Rc::new(RefCell::new(Printed {
            limit: self.limits.max_output_bytes,
            ..Printed::default()
        }));
        let stop = Stop {
            limits: self.limits,
            timed_out: &timed_out,
        };
        let value = context.with(|ctx| -> Result<serde_json::Value, SandboxError> {
            install_console(&ctx, printed.clone()).map_err(engine)?;
            for (name, host) in &self.grants {
                install_grant(&ctx, name, host.clone()).map_err(engine)?;
            }
            let value = ctx
                .eval::<Value, _>(code)
                .catch(&ctx)
                .map_err(|caught| stop.classify(caught))?;
            result_json(&ctx, value, &stop)
        });
        let value = match value {
            // With no memory left for an error object the engine throws `null`.
            Err(SandboxError::Thrown { name, message, .. })
                if name == "value" && message == "null" && near_limit(&runtime, &self.limits) =>
            {
                return Err(SandboxError::OutOfMemory {
                    limit: self.limits.memory_bytes,
                });
            }
            other => other?,
        };
        let printed = printed.take();
        Ok(Execution {
            value,
            printed: printed.text,
            printed_cut: printed.cut,
            steps: steps.load(Ordering::Relaxed),
            elapsed: started.elapsed(),
        })
    }

    /// [`run`](Self::run) for async code: the run's thread is awaited, not waited for, so the
    /// caller's executor goes on (the run's own limits bound it).
    pub async fn run_async(&self, code: impl Into<String>) -> Result<Execution, SandboxError> {
        let (sandbox, code) = (self.clone(), code.into());
        let (answer, answered) = tokio::sync::oneshot::channel();
        self.thread()
            .spawn(move || {
                // The receiver is gone only when the caller stopped waiting.
                let _ = answer.send(sandbox.run_here(&code));
            })
            .map_err(no_thread)?;
        answered.await.map_err(|_| panicked())?
    }
}

fn no_thread(error: std::io::Error) -> SandboxError {
    SandboxError::Engine(format!("no thread for the run: {error}"))
}

fn panicked() -> SandboxError {
    SandboxError::Engine("the run's thread panicked".into())
}

/// Stack a run's thread has beyond the engine's limit: the host's frames below the engine's, and
/// the engine's own native calls past the point where it checks.
const THREAD_STACK_MARGIN: usize = 2 << 20;

/// What tells the limits apart when the engine stops the code.
struct Stop<'a> {
    limits: Limits,
    timed_out: &'a AtomicBool,
}

impl Stop<'_> {
    /// The error of what the code threw, or of the limit that stopped it.
    fn classify(&self, caught: CaughtError<'_>) -> SandboxError {
        match caught {
            CaughtError::Exception(exception) => {
                let name: String = exception.get("name").unwrap_or_else(|_| "Error".into());
                let message = exception.message().unwrap_or_default();
                let at = exception.stack().as_deref().and_then(place);
                self.error(name, message, at)
            }
            CaughtError::Value(value) => {
                let message = value
                    .ctx()
                    .json_stringify(value.clone())
                    .ok()
                    .flatten()
                    .and_then(|text| text.to_string().ok())
                    .unwrap_or_else(|| value.type_name().to_owned());
                SandboxError::Thrown {
                    name: "value".into(),
                    message,
                    at: None,
                }
            }
            CaughtError::Error(error) => {
                self.error("InternalError".into(), error.to_string(), None)
            }
        }
    }

    fn error(&self, name: String, message: String, at: Option<String>) -> SandboxError {
        match (name.as_str(), message.as_str()) {
            ("InternalError", "interrupted") if self.timed_out.load(Ordering::Relaxed) => {
                SandboxError::TimeLimit {
                    limit: self.limits.time,
                }
            }
            ("InternalError", "interrupted") => SandboxError::StepLimit {
                limit: self.limits.max_steps,
            },
            (_, "out of memory") => SandboxError::OutOfMemory {
                limit: self.limits.memory_bytes,
            },
            ("RangeError", "Maximum call stack size exceeded") => SandboxError::StackOverflow {
                limit: self.limits.stack_bytes,
            },
            ("SyntaxError", _) => SandboxError::Syntax { message, at },
            _ => SandboxError::Thrown { name, message, at },
        }
    }
}

/// Whether the engine's heap is within a megabyte (or a tenth) of its limit.
fn near_limit(runtime: &Runtime, limits: &Limits) -> bool {
    let used = usize::try_from(runtime.memory_usage().malloc_size).unwrap_or(usize::MAX);
    let margin = (limits.memory_bytes / 10).min(1 << 20);
    used.saturating_add(margin) >= limits.memory_bytes
}

/// The code's value as JSON, within the output limit.
fn result_json<'js>(
    ctx: &Ctx<'js>,
    value: Value<'js>,
    stop: &Stop<'_>,
) -> Result<serde_json::Value, SandboxError> {
    let text = match json_text(ctx, value).catch(ctx) {
        Ok(text) => text,
        // A cycle or a value too deep to write: not JSON; a limit is that limit.
        Err(caught) => {
            return Err(match stop.classify(caught) {
                SandboxError::Thrown { message, .. } | SandboxError::Syntax { message, .. } => {
                    SandboxError::NotJson { reason: message }
                }
                SandboxError::StackOverflow { .. } => SandboxError::NotJson {
                    reason: "it is nested too deeply".into(),
                },
                limit => limit,
            });
        }
    };
    let Some(text) = text else {
        return Ok(serde_json::Value::Null);
    };
    if text.len() > stop.limits.max_output_bytes {
        return Err(SandboxError::ResultTooLarge {
            limit: stop.limits.max_output_bytes,
        });
    }
    serde_json::from_str(&text).map_err(|error| SandboxError::NotJson {
        reason: error.to_string(),
    })
}

/// The place of the first frame of an engine stack (`eval_script:1:20`).
fn place(stack: &str) -> Option<String> {
    let line = stack
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("at "))?;
    let inner = match (line.rfind('('), line.rfind(')')) {
        (Some(open), Some(close)) if open < close => &line[open + 1..close],
        _ => line.trim_start_matches("at ").trim(),
    };
    Some(inner.to_owned())
}
