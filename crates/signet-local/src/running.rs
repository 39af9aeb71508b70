//! Which model servers started from one cache are running now: every server
//! [`LlamaCpp::serve`](crate::LlamaCpp::serve) starts leaves a file `servers/<pid>` in the cache
//! for as long as its handle lives, holding the launcher path its command line contains. A server
//! counts as running while a process with that id is alive and its command line still names the
//! launcher (a reused id is not mistaken for it); files of servers that are gone are removed when
//! seen.

use std::fs;
use std::path::{Path, PathBuf};

use crate::LocalError;

/// The directory of the pid files under the cache `root`.
fn dir(root: &Path) -> PathBuf {
    root.join("servers")
}

/// A server's pid file, removed when dropped (with the [`LocalServer`](crate::LocalServer) that
/// holds it).
#[derive(Debug)]
pub(crate) struct Registration {
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Records that the server process `pid`, whose command line contains `launcher`, runs from the
/// cache `root`.
pub(crate) fn register(root: &Path, pid: u32, launcher: &Path) -> Result<Registration, LocalError> {
    let dir = dir(root);
    fs::create_dir_all(&dir).map_err(|source| LocalError::Io {
        action: format!("create {}", dir.display()),
        source,
    })?;
    let path = dir.join(pid.to_string());
    signet::fs_atomic::write_atomic(&path, launcher.display().to_string().as_bytes()).map_err(
        |source| LocalError::Io {
            action: format!("write {}", path.display()),
            source,
        },
    )?;
    Ok(Registration { path })
}

/// The process ids of the servers started from the cache `root` that are running now, in
/// ascending order.
pub(crate) fn running(root: &Path) -> Vec<u32> {
    let Ok(entries) = fs::read_dir(dir(root)) else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let launcher = fs::read_to_string(entry.path()).ok()?;
            if alive(pid, &launcher) {
                Some(pid)
            } else {
                let _ = fs::remove_file(entry.path());
                None
            }
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// What [`LlamaCpp::serve`](crate::LlamaCpp::serve) says when other servers from the same cache
/// run.
pub(crate) fn warning(root: &Path, pids: &[u32]) -> String {
    let list: Vec<String> = pids.iter().map(ToString::to_string).collect();
    let (servers, are) = if pids.len() == 1 {
        ("another model server", "is")
    } else {
        ("other model servers", "are")
    };
    format!(
        "{servers} started from {} {are} running (pid {}): servers on the same cores slow each \
         other down, each can be many times slower than one alone; stop {}, or share one server \
         (`LlamaCpp::slots` for concurrent requests)",
        root.display(),
        list.join(", "),
        if pids.len() == 1 { "it" } else { "them" },
    )
}

/// Whether process `pid` runs and its command line contains `launcher`.
#[cfg(target_os = "linux")]
fn alive(pid: u32, launcher: &str) -> bool {
    // A zombie's (or a gone process's) command line is empty or unreadable.
    fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
        !launcher.is_empty()
            && cmdline
                .windows(launcher.len())
                .any(|window| window == launcher.as_bytes())
    })
}

/// Whether process `pid` runs (its command line is not checked here).
#[cfg(all(unix, not(target_os = "linux")))]
fn alive(pid: u32, _launcher: &str) -> bool {
    std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Unknown on this platform: no server counts as running.
#[cfg(not(unix))]
fn alive(_pid: u32, _launcher: &str) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn root(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!(
            "signet-local-running-{}-{name}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&root);
        root
    }

    #[test]
    fn a_registered_process_runs_until_it_ends_and_its_file_goes_with_it() {
        let root = root("ends");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        // Until the child has exec'd, its command line can read empty.
        let started = std::time::Instant::now();
        while !alive(child.id(), "sleep") && started.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let registration = register(&root, child.id(), Path::new("sleep")).unwrap();
        assert_eq!(running(&root), [child.id()]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(running(&root), Vec::<u32>::new());
        assert!(
            !dir(&root).join(child.id().to_string()).exists(),
            "stale file removed"
        );
        drop(registration);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn a_process_whose_command_line_does_not_name_the_launcher_is_not_a_server() {
        let root = root("reused");
        let _registration = register(
            &root,
            std::process::id(),
            Path::new("/nowhere/signet_serve.py"),
        )
        .unwrap();
        assert_eq!(running(&root), Vec::<u32>::new());
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn dropping_the_registration_removes_its_file() {
        let root = root("drop");
        // This test's own command line holds its binary's name.
        let registration = register(&root, std::process::id(), Path::new("signet_local")).unwrap();
        assert_eq!(running(&root), [std::process::id()]);
        drop(registration);
        assert_eq!(running(&root), Vec::<u32>::new());
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn the_warning_names_the_cache_and_the_servers() {
        assert_eq!(
            warning(Path::new("/cache"), &[12]),
            "another model server started from /cache is running (pid 12): servers on the same \
             cores slow each other down, each can be many times slower than one alone; stop it, \
             or share one server (`LlamaCpp::slots` for concurrent requests)"
        );
        assert!(
            warning(Path::new("/cache"), &[12, 13])
                .starts_with("other model servers started from /cache are running (pid 12, 13)")
        );
    }
}
