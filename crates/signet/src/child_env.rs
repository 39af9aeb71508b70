//! The environment a server Signet starts gets: an allow-list, not the whole environment.
//!
//! A child process inherits its parent's environment by default, and with it every secret there
//! (`OPENAI_API_KEY`, cloud credentials, tokens). The servers Signet starts for you (the local
//! model's server in signet-local, the Restate server in signet-restate) need none of them, so
//! they start from an empty environment plus [`allowed`]'s variables: where programs and
//! libraries are (`PATH`, `LD_LIBRARY_PATH`), the user and home, locale and time zone, the
//! temporary directory, the thread and device settings of inference libraries (`OMP_*`,
//! `GGML_*`, `LLAMA_*`, `CUDA_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES`), and the prefixes the
//! caller names (signet-restate passes `RESTATE_`). A server of yours that needs another
//! variable gets it by name from its command's own `env`.
//!
//! ```
//! use std::ffi::OsString;
//!
//! let parent = [("PATH", "/usr/bin"), ("OPENAI_API_KEY", "sk-…"), ("RESTATE_LOG_FILTER", "warn")]
//!     .map(|(k, v)| (OsString::from(k), OsString::from(v)));
//! let kept: Vec<_> = signet::child_env::filter(parent, &["RESTATE_"]).collect();
//! assert_eq!(kept.len(), 2);
//! assert!(kept.iter().all(|(name, _)| name != "OPENAI_API_KEY"));
//! ```

use std::ffi::OsString;

/// Variables passed by name.
const NAMES: [&str; 18] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    // Windows: where the system is, and how programs are found and run.
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
];

/// Variables passed by prefix.
const PREFIXES: [&str; 4] = ["LC_", "OMP_", "GGML_", "LLAMA_"];

/// This process's variables that a server it starts may see, with those starting with one of
/// `prefixes` too.
pub fn allowed(prefixes: &[&str]) -> Vec<(OsString, OsString)> {
    filter(std::env::vars_os(), prefixes).collect()
}

/// The variables of `vars` that are on the allow-list or start with one of `prefixes`.
pub fn filter<'a>(
    vars: impl IntoIterator<Item = (OsString, OsString)> + 'a,
    prefixes: &'a [&'a str],
) -> impl Iterator<Item = (OsString, OsString)> + 'a {
    vars.into_iter().filter(move |(name, _)| {
        let Some(name) = name.to_str() else {
            return false;
        };
        NAMES.contains(&name)
            || PREFIXES
                .iter()
                .chain(prefixes)
                .any(|prefix| name.starts_with(prefix))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_not_passed_and_the_basics_are() {
        let parent = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("LC_ALL", "C.UTF-8"),
            ("OMP_NUM_THREADS", "2"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("SIGNET_MCP_TOKEN", "secret"),
            ("RESTATE_LOG_FILTER", "warn"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let kept: Vec<String> = filter(parent.clone(), &[])
            .map(|(k, _)| k.into_string().unwrap())
            .collect();
        assert_eq!(kept, ["PATH", "HOME", "LC_ALL", "OMP_NUM_THREADS"]);
        let with_restate = filter(parent, &["RESTATE_"]).count();
        assert_eq!(with_restate, 5);
    }
}
