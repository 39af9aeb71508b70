//! How Signet writes files, so that a crash, a full disk or a killed process never leaves half a
//! file behind.
//!
//! - **Whole files** (saved programs, `best_program.json`, GEPA's state and candidates, the LM
//!   disk cache) go through [`write_atomic`]: the bytes are written to a temporary file in the
//!   same directory, synced, renamed over the target, and the directory is synced. A reader sees
//!   the old file or the new one, never a mix; on any failure the old file is left as it was.
//! - **Append-only logs** (MIPROv2's `mipro_log.jsonl`, GEPA's `run_log.jsonl`) get one record at
//!   a time through `append_line`, each written whole and synced before the call returns. A
//!   crash can still cut the last record short, so `read_log` skips a torn last line (with a
//!   warning naming the file and the line) while a bad line before it is an error.
//!
//! [`write_atomic`] is public so that crates built on Signet (signet-local's markers,
//! signet-restate's configuration, your own stores of parked runs) write files the same way.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::de::DeserializeOwned;

/// Temporary files of this process get distinct names.
static TEMPORARIES: AtomicU64 = AtomicU64::new(0);

/// The directory holding `path` (`.` for a bare file name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Replaces the file at `path` with `bytes`, atomically: a temporary file in the same directory
/// (`.<name>.<pid>.<n>.tmp`) is written and synced, renamed over `path`, and the directory is
/// synced (on Unix). On any failure the temporary file is removed and the file at `path` is as
/// it was. A process killed mid-write can leave its temporary file behind, never a torn target.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("signet-doc-atomic-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("state.json");
/// signet::fs_atomic::write_atomic(&path, br#"{"turn": 1}"#)?;
/// signet::fs_atomic::write_atomic(&path, br#"{"turn": 2}"#)?;
/// assert_eq!(std::fs::read_to_string(&path)?, r#"{"turn": 2}"#);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_replacing(path, bytes, false)
}

/// [`write_atomic`] for a file with a secret or a prompt in it: the file is readable and writable
/// by its owner only (`0600` on Unix) from its first byte, whatever the file it replaces allowed.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("signet-doc-private-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("key.pem");
/// signet::fs_atomic::write_private(&path, b"secret")?;
/// # #[cfg(unix)]
/// # {
/// use std::os::unix::fs::PermissionsExt;
/// assert_eq!(std::fs::metadata(&path)?.permissions().mode() & 0o777, 0o600);
/// # }
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_replacing(path, bytes, true)
}

/// Creates `path` and its missing parents; the directories it creates are readable by their
/// owner only (`0700` on Unix). Directories that exist are left as they are.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("signet-doc-dir-{}", std::process::id()));
/// signet::fs_atomic::create_private_dir_all(&dir.join("runs"))?;
/// # #[cfg(unix)]
/// # {
/// use std::os::unix::fs::PermissionsExt;
/// assert_eq!(std::fs::metadata(dir.join("runs"))?.permissions().mode() & 0o777, 0o700);
/// # }
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn create_private_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(path)
}

fn write_replacing(path: &Path, bytes: &[u8], private: bool) -> io::Result<()> {
    let directory = directory_of(path);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })?;
    let (temporary, mut file) = create_temporary(directory, &name.to_string_lossy(), private)?;
    let written = (|| {
        // A replaced file keeps its permissions (a private file stays private).
        if !private
            && let Ok(metadata) = std::fs::metadata(path)
            && metadata.is_file()
        {
            file.set_permissions(metadata.permissions())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    sync_directory(directory)
}

/// A new temporary file in `directory` for the file `name`; `private`: `0600` on Unix.
fn create_temporary(directory: &Path, name: &str, private: bool) -> io::Result<(PathBuf, File)> {
    let mut attempts = 0;
    loop {
        let n = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
        let temporary = directory.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        if private {
            owner_only(&mut options);
        }
        match options.open(&temporary) {
            Ok(file) => return Ok((temporary, file)),
            // A file left by a killed process that had the same id.
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempts < 16 => {
                attempts += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Files `options` creates are readable and writable by their owner only (`0600` on Unix;
/// elsewhere the system's default).
fn owner_only(options: &mut OpenOptions) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = options;
}

/// Makes a rename or a new file in `directory` durable (Unix; elsewhere a no-op). A file system
/// that cannot sync a directory is not an error.
fn sync_directory(directory: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        match File::open(directory).and_then(|d| d.sync_all()) {
            Ok(()) => Ok(()),
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                ) =>
            {
                Ok(())
            }
            Err(error) => Err(error),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = directory;
        Ok(())
    }
}

/// Appends `line` and a newline to the log at `path` (created when missing) in one write, and
/// syncs it before returning. A file whose last line was cut short (no final newline) gets a
/// newline first, so the new record starts a line of its own.
pub(crate) fn append_line(path: &Path, line: &str) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.read(true).append(true).create(true);
    // A run log holds prompts: a new one is its owner's only.
    owner_only(&mut options);
    let mut file = options.open(path)?;
    let length = file.metadata()?.len();
    let mut record = Vec::with_capacity(line.len() + 2);
    if length > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(length - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            record.push(b'\n');
        }
    }
    record.extend_from_slice(line.as_bytes());
    record.push(b'\n');
    file.write_all(&record)?;
    file.sync_data()?;
    if length == 0 {
        // A new file's directory entry.
        sync_directory(directory_of(path))?;
    }
    Ok(())
}

/// Cuts the log at `path` to its first `length` bytes (what [`read_log`] read whole), dropping a
/// torn last line, and syncs it.
pub(crate) fn truncate(path: &Path, length: u64) -> io::Result<()> {
    let file = OpenOptions::new().write(true).open(path)?;
    file.set_len(length)?;
    file.sync_all()
}

/// The records of a JSON-lines log, as [`read_log`] reads them.
#[derive(Debug)]
pub(crate) struct LogRead<T> {
    /// Each record with its line number (from 1); blank lines are skipped.
    pub(crate) records: Vec<(usize, T)>,
    /// The bytes up to the end of the last whole line.
    pub(crate) intact: u64,
    /// The number of the torn last line that was skipped, if there was one.
    pub(crate) torn: Option<usize>,
}

/// A line before the last that cannot be read.
#[derive(Debug)]
pub(crate) struct BadLine {
    /// Its number, from 1.
    pub(crate) line: usize,
    /// Why.
    pub(crate) reason: String,
}

impl std::fmt::Display for BadLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {} cannot be read: {}", self.line, self.reason)
    }
}

/// Reads the JSON-lines log `bytes` (the contents of `path`). The last line is torn when it has
/// no final newline or is not a `T` (not UTF-8, not JSON, not the record's shape): it is skipped
/// with a warning naming `path` and the line. Any other line that is not a `T` is a [`BadLine`]:
/// a log damaged in the middle is not silently shortened.
pub(crate) fn read_log<T: DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<LogRead<T>, BadLine> {
    let mut lines: Vec<(usize, &[u8], usize)> = Vec::new();
    let mut start = 0;
    for (n, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        start += line.len();
        lines.push((n + 1, line, start));
    }
    let is_blank = |line: &[u8]| line.iter().all(u8::is_ascii_whitespace);
    let last = lines
        .iter()
        .rposition(|(_, line, _)| !is_blank(line))
        .map(|at| lines[at].0);
    let mut read = LogRead {
        records: Vec::new(),
        intact: 0,
        torn: None,
    };
    for (n, line, end) in lines {
        let whole = line.ends_with(b"\n");
        if is_blank(line) {
            if whole {
                read.intact = end as u64;
            }
            continue;
        }
        let parsed = serde_json::from_slice::<T>(line.trim_ascii_end());
        match parsed {
            Ok(record) if whole => {
                read.records.push((n, record));
                read.intact = end as u64;
            }
            result if Some(n) == last => {
                let reason = match result {
                    Err(error) => error.to_string(),
                    Ok(_) => "it has no final newline".to_owned(),
                };
                tracing::warn!(
                    file = %path.display(),
                    line = n,
                    %reason,
                    "skipping the torn last line of a log (a run stopped while writing it)"
                );
                read.torn = Some(n);
                break;
            }
            Err(error) => {
                return Err(BadLine {
                    line: n,
                    reason: error.to_string(),
                });
            }
            // Only the last line can lack its newline.
            Ok(_) => unreachable!("a line before the last ends with a newline"),
        }
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::Value;

    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("signet-fs-atomic-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn a_write_replaces_the_file_and_leaves_no_temporary() {
        let dir = temp_dir("replace");
        let path = dir.join("state.json");
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_rename_leaves_the_old_target_and_no_temporary() {
        // The target is a non-empty directory: the rename fails after the bytes were written.
        let dir = temp_dir("rename");
        let path = dir.join("state.json");
        std::fs::create_dir_all(path.join("inside")).unwrap();
        std::fs::write(path.join("inside/keep"), b"kept").unwrap();
        assert!(write_atomic(&path, b"new").is_err());
        assert_eq!(std::fs::read(path.join("inside/keep")).unwrap(), b"kept");
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_panic() {
        let dir = temp_dir("missing");
        let error = write_atomic(&dir.join("no/such/dir/state.json"), b"x").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert!(write_atomic(Path::new("/"), b"x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("permissions");
        let path = dir.join("state.json");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"new").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn files_with_prompts_or_secrets_are_their_owners_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let dir = temp_dir("private");
        // A private write replaces a readable file with a private one.
        let key = dir.join("key.pem");
        std::fs::write(&key, b"old").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&key, b"secret").unwrap();
        assert_eq!(mode(&key), 0o600);
        // A new run log, and the directories made for one.
        let runs = dir.join("runs/mipro");
        create_private_dir_all(&runs).unwrap();
        assert_eq!((mode(&dir.join("runs")), mode(&runs)), (0o700, 0o700));
        let log = runs.join("log.jsonl");
        append_line(&log, "{}").unwrap();
        assert_eq!(mode(&log), 0o600);
        // A directory that exists is left as it is.
        std::fs::set_permissions(&runs, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir_all(&runs).unwrap();
        assert_eq!(mode(&runs), 0o755);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn appends_start_a_new_line_after_a_torn_one() {
        let dir = temp_dir("append");
        let path = dir.join("log.jsonl");
        append_line(&path, "{\"a\":1}").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"b\":")
            .unwrap();
        append_line(&path, "{\"c\":3}").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"a\":1}\n{\"b\":\n{\"c\":3}\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The fields of each warning `run` logs, as `name=value ` pairs.
    fn warnings(run: impl FnOnce()) -> Vec<String> {
        struct Recorder(Arc<Mutex<Vec<String>>>);
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!("{}={value:?} ", field.name()));
            }
        }
        impl tracing::Subscriber for Recorder {
            fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
                true
            }
            fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
                tracing::span::Id::from_u64(1)
            }
            fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
            fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
            fn event(&self, event: &tracing::Event<'_>) {
                if *event.metadata().level() == tracing::Level::WARN {
                    let mut fields = Fields(String::new());
                    event.record(&mut fields);
                    self.0.lock().unwrap().push(fields.0);
                }
            }
            fn enter(&self, _: &tracing::span::Id) {}
            fn exit(&self, _: &tracing::span::Id) {}
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        tracing::subscriber::with_default(Recorder(seen.clone()), run);
        seen.lock().unwrap().clone()
    }

    #[test]
    fn a_torn_last_line_is_skipped_with_a_warning_naming_file_and_line() {
        let path = Path::new("/runs/log.jsonl");
        let head = b"{\"a\": 1}\n\n";
        // (the torn end, its line, the records kept, the bytes kept)
        let cases: [(&[u8], usize, usize, usize); 5] = [
            (b"{\"b\": 2", 3, 1, 10),                      // cut short
            (b"{\"b\": 2}", 3, 1, 10),                     // whole JSON, but no final newline
            (b"{\"b\": \"caf\xc3", 3, 1, 10),              // cut inside a UTF-8 character
            (b"not json\n", 3, 1, 10),                     // a whole line that is not a record
            (b"{\"b\": 2}\n{\"c\": 3}\n\0\0\0", 5, 3, 28), // zeros a crash left
        ];
        for (torn, line, kept, intact) in cases {
            let bytes = [&head[..], torn].concat();
            let shown = String::from_utf8_lossy(torn).into_owned();
            let mut read = None;
            let logged = warnings(|| read = Some(read_log::<Value>(path, &bytes).unwrap()));
            let read = read.unwrap();
            assert_eq!(read.torn, Some(line), "{shown}");
            assert_eq!(read.records.len(), kept, "{shown}");
            assert_eq!(read.intact, intact as u64, "{shown}");
            assert_eq!(logged.len(), 1, "{shown}: {logged:?}");
            assert!(logged[0].contains("/runs/log.jsonl"), "{logged:?}");
            assert!(logged[0].contains(&format!("line={line} ")), "{logged:?}");
        }
    }

    #[test]
    fn a_bad_line_before_the_last_is_an_error() {
        let path = Path::new("log.jsonl");
        let bytes = b"{\"a\": 1}\n{\"b\": \n{\"c\": 3}\n";
        let error = read_log::<Value>(path, bytes).unwrap_err();
        assert_eq!(error.line, 2);
        assert!(error.to_string().starts_with("line 2 cannot be read"));
        let bytes = b"{\"a\": 1}\n\xff\xfe\n{\"c\": 3}\n";
        assert_eq!(read_log::<Value>(path, bytes).unwrap_err().line, 2);
    }

    #[test]
    fn a_whole_log_reads_whole() {
        let bytes = b"{\"a\": 1}\n\n{\"b\": 2}\n\n";
        let read = read_log::<Value>(Path::new("log.jsonl"), bytes).unwrap();
        assert_eq!(read.records.len(), 2);
        assert_eq!(read.records[1].0, 3);
        assert_eq!(read.torn, None);
        assert_eq!(read.intact, bytes.len() as u64);
        let empty = read_log::<Value>(Path::new("log.jsonl"), b"").unwrap();
        assert!(empty.records.is_empty() && empty.torn.is_none() && empty.intact == 0);
    }
}
