//! The prompt cache kept between server runs: llama.cpp's slot save and restore.
//!
//! Within one server, llama.cpp reuses the longest cached prefix of a prompt (`cache_prompt`), so
//! a program's second call skips the system message and demos it shares with the first. A new
//! server starts empty, and every run of a program (every `cargo run --example react_agent`)
//! evaluates the same demos again. [`PromptCache`] saves slot 0's tokens and KV cache into the
//! cache directory when the server is stopped ([`LocalServer::stop`](crate::LocalServer::stop))
//! and restores them into every slot when the next server with the same model, template and
//! context size starts: the next run's first call evaluates only what differs from the last
//! run's.
//!
//! llama.cpp aborts the whole server on a slot file that is cut short, so a saved file is only
//! ever restored through its manifest (`prompt-<key>.json`: the file's name, its size and the
//! SHA-256 of its first and last MiB), written after the file was checked. The cache only ever saves time: a file that cannot be
//! saved or restored (a full disk, a torn or altered file) is reported as a warning and removed,
//! and the server runs on without it.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use signet::serde_json::{self, Value, json};

/// How many saved prompts a cache directory keeps (the newest; one per model, template and
/// context size).
const KEEP_FILES: usize = 4;

/// The time allowed for one save or restore request (a full 8,192-token slot of SmolLM2-135M is
/// about 190 MB, written in well under a second): what `stop` waits at most for a server that
/// does not answer before it stops it anyway.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// A slot file no manifest names is removed once it is this old (a save still running is younger).
const ORPHAN_AGE: Duration = Duration::from_secs(3600);

/// Where a server's slots are saved and restored, and under which name.
#[derive(Debug, Clone)]
pub(crate) struct PromptCache {
    /// The server's `--slot-save-path`: files are named relative to it.
    dir: PathBuf,
    /// `prompt-<key>`, the key naming the model, template and context size.
    stem: String,
    /// The server's slots (each gets the restored prompt).
    slots: u32,
}

/// What a save or restore did, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Tokens saved or restored.
    Tokens(u64),
    /// Nothing to restore yet, or nothing to save (slot 0 never ran).
    Nothing,
}

/// A checked slot file: what its manifest says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Manifest {
    file: String,
    bytes: u64,
    sha256: String,
    tokens: u64,
}

impl Manifest {
    fn to_json(&self) -> Value {
        json!({
            "file": self.file,
            "bytes": self.bytes,
            "sha256_of_ends": self.sha256,
            "tokens": self.tokens,
        })
    }

    fn from_json(value: &Value) -> Option<Manifest> {
        let file = value["file"].as_str()?;
        // A manifest names a file beside it, never a path.
        if file.contains(['/', '\\']) || file.starts_with('.') {
            return None;
        }
        Some(Manifest {
            file: file.to_owned(),
            bytes: value["bytes"].as_u64()?,
            sha256: value["sha256_of_ends"].as_str()?.to_owned(),
            tokens: value["tokens"].as_u64()?,
        })
    }
}

impl PromptCache {
    /// The cache in `dir` for a server identified by `identity` (the model's digest, the
    /// template, the context size, the server's version: whatever makes a KV cache unusable
    /// elsewhere).
    pub(crate) fn new(dir: PathBuf, identity: &str, slots: u32) -> PromptCache {
        PromptCache {
            dir,
            stem: format!("prompt-{:016x}", crate::naming::fnv1a(identity.as_bytes())),
            slots: slots.max(1),
        }
    }

    /// The directory the server saves into (`--slot-save-path`).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest's path: the file to remove to forget the saved prompt.
    pub(crate) fn manifest_path(&self) -> PathBuf {
        self.dir.join(format!("{}.json", self.stem))
    }

    /// Loads the saved prompt into every slot of the server at `base_url` (its OpenAI base URL,
    /// `…/v1`), once its file is checked against its manifest. A file that fails the check or
    /// that the server refuses is removed, so that the next run does not trip on it.
    pub(crate) async fn restore(&self, base_url: &str) -> Result<Outcome, String> {
        let manifest = match manifest_at(&self.manifest_path()) {
            Ok(None) => return Ok(Outcome::Nothing),
            Ok(Some(manifest)) => manifest,
            Err(()) => {
                self.forget(None);
                return Err(format!(
                    "{} is not a manifest of a saved prompt; removed",
                    self.manifest_path().display()
                ));
            }
        };
        let path = self.dir.join(&manifest.file);
        match digest_off_thread(&path).await? {
            Ok((bytes, sha256)) if bytes == manifest.bytes && sha256 == manifest.sha256 => {}
            Ok((bytes, _)) => {
                self.forget(Some(&manifest));
                return Err(format!(
                    "{} is not the file that was saved ({bytes} bytes, {} expected, or another \
                     SHA-256); removed",
                    path.display(),
                    manifest.bytes
                ));
            }
            Err(error) => {
                self.forget(Some(&manifest));
                return Err(format!(
                    "{} cannot be read ({error}); removed",
                    path.display()
                ));
            }
        }
        let client = client()?;
        for slot in 0..self.slots {
            if let Err(error) =
                slot_action(&client, base_url, slot, "restore", &manifest.file).await
            {
                self.forget(Some(&manifest));
                return Err(format!(
                    "{} was not restored into slot {slot} ({error}); removed",
                    path.display()
                ));
            }
        }
        Ok(Outcome::Tokens(manifest.tokens))
    }

    /// Saves slot 0 of the server at `base_url` into a new file, checks it, and points the
    /// manifest at it (replacing the manifest atomically, so that a server starting meanwhile
    /// reads the old prompt or the new, never half of one). An empty slot leaves the saved prompt
    /// as it was.
    pub(crate) async fn save(&self, base_url: &str) -> Result<Outcome, String> {
        let client = client()?;
        let file = format!("{}.{}.bin", self.stem, crate::naming::nonce());
        let path = self.dir.join(&file);
        let outcome = self.save_into(&client, base_url, &file, &path).await;
        if !matches!(outcome, Ok(Outcome::Tokens(_))) {
            let _ = fs::remove_file(&path);
        }
        self.prune();
        outcome
    }

    async fn save_into(
        &self,
        client: &reqwest::Client,
        base_url: &str,
        file: &str,
        path: &Path,
    ) -> Result<Outcome, String> {
        let answer = slot_action(client, base_url, 0, "save", file)
            .await
            .map_err(|error| format!("slot 0 was not saved: {error}"))?;
        let tokens = answer["n_saved"].as_u64().unwrap_or(0);
        if tokens == 0 {
            return Ok(Outcome::Nothing);
        }
        let written = answer["n_written"].as_u64();
        let (bytes, sha256) = digest_off_thread(path)
            .await?
            .map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
        if written != Some(bytes) {
            return Err(format!(
                "{} holds {bytes} bytes, the server said it wrote {written:?} (is the disk full?)",
                path.display()
            ));
        }
        let manifest = Manifest {
            file: file.to_owned(),
            bytes,
            sha256,
            tokens,
        };
        let previous = manifest_at(&self.manifest_path()).ok().flatten();
        signet::fs_atomic::write_private(
            &self.manifest_path(),
            manifest.to_json().to_string().as_bytes(),
        )
        .map_err(|e| format!("could not write {}: {e}", self.manifest_path().display()))?;
        if let Some(previous) = previous.filter(|p| p.file != manifest.file) {
            let _ = fs::remove_file(self.dir.join(previous.file));
        }
        Ok(Outcome::Tokens(tokens))
    }

    /// Removes the manifest and the file it names.
    fn forget(&self, manifest: Option<&Manifest>) {
        let _ = fs::remove_file(self.manifest_path());
        if let Some(manifest) = manifest {
            let _ = fs::remove_file(self.dir.join(&manifest.file));
        }
    }

    /// Keeps the [`KEEP_FILES`] newest manifests and the files they name; removes older
    /// manifests, their files, and slot files no manifest names that are older than
    /// [`ORPHAN_AGE`] (left by a save that was interrupted).
    fn prune(&self) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let mut manifests = Vec::new();
        let mut slot_files = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(modified) = entry.metadata().and_then(|m| m.modified()) else {
                continue;
            };
            if !name.starts_with("prompt-") {
                continue;
            }
            if name.ends_with(".json") {
                manifests.push((modified, entry.path()));
            } else if name.ends_with(".bin") {
                slot_files.push((modified, name));
            }
        }
        manifests.sort_by_key(|entry| std::cmp::Reverse(entry.0));
        let mut named = Vec::new();
        for (index, (_, path)) in manifests.iter().enumerate() {
            match manifest_at(path).ok().flatten() {
                Some(manifest) if index < KEEP_FILES => named.push(manifest.file),
                _ => {
                    let _ = fs::remove_file(path);
                }
            }
        }
        for (modified, name) in slot_files {
            let old = modified.elapsed().is_ok_and(|age| age > ORPHAN_AGE);
            if old && !named.contains(&name) {
                let _ = fs::remove_file(self.dir.join(name));
            }
        }
    }
}

/// The manifest at `path`: `None` when there is none, `Err` when the file is not one.
fn manifest_at(path: &Path) -> Result<Option<Manifest>, ()> {
    let Ok(text) = fs::read(path) else {
        return Ok(None);
    };
    let value = serde_json::from_slice::<Value>(&text).map_err(|_| ())?;
    Manifest::from_json(&value).map(Some).ok_or(())
}

/// [`digest`] on the blocking pool; `Err` only if that task failed.
async fn digest_off_thread(path: &Path) -> Result<std::io::Result<(u64, String)>, String> {
    let owned = path.to_owned();
    tokio::task::spawn_blocking(move || digest(&owned))
        .await
        .map_err(|e| format!("the check of {} failed: {e}", path.display()))
}

/// How much of each end of a slot file its digest covers.
const DIGEST_SPAN: u64 = 1 << 20;

/// The size of the file at `path` and the SHA-256 (hex) of its first and last [`DIGEST_SPAN`]
/// bytes: what tells a file cut short, grown or replaced (llama.cpp's header, with the sizes it
/// trusts, is at the start) from the one that was saved, in milliseconds whatever the file's size
/// (hashing all of a 50 MB file takes a second in a debug build).
fn digest(path: &Path) -> std::io::Result<(u64, String)> {
    use std::io::{Seek, SeekFrom};
    let mut file = fs::File::open(path)?;
    let bytes = file.metadata()?.len();
    let mut hasher = Sha256::new();
    hasher.update(bytes.to_le_bytes());
    let head = bytes.min(DIGEST_SPAN);
    let mut buffer = vec![0; head as usize];
    file.read_exact(&mut buffer)?;
    hasher.update(&buffer);
    let tail = (bytes - head).min(DIGEST_SPAN);
    if tail > 0 {
        file.seek(SeekFrom::Start(bytes - tail))?;
        buffer.resize(tail as usize, 0);
        file.read_exact(&mut buffer)?;
        hasher.update(&buffer);
    }
    let sha256 = hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    Ok((bytes, sha256))
}

fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))
}

/// `POST /slots/{slot}?action={action}` with `{"filename": file}` on the server whose OpenAI base
/// URL is `base_url`; its JSON answer, or what went wrong.
async fn slot_action(
    client: &reqwest::Client,
    base_url: &str,
    slot: u32,
    action: &str,
    file: &str,
) -> Result<Value, String> {
    let root = base_url.trim_end_matches('/').trim_end_matches("/v1");
    let response = client
        .post(format!("{root}/slots/{slot}?action={action}"))
        .json(&json!({ "filename": file }))
        .send()
        .await
        .map_err(|e| format!("the server did not answer: {e}"))?;
    let status = response.status();
    let mut body = response
        .text()
        .await
        .map_err(|e| format!("the answer broke off: {e}"))?;
    if !status.is_success() {
        crate::notice::cut_at_char(&mut body, 300);
        return Err(format!("HTTP {status}: {body}"));
    }
    serde_json::from_str(&body).map_err(|e| format!("an answer that is not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("signet-prompts-{}", crate::naming::nonce()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn age(path: &Path, seconds: u64) {
        let when = std::time::SystemTime::now() - Duration::from_secs(seconds);
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    fn manifest_for(dir: &Path, stem: &str, contents: &[u8]) -> Manifest {
        let file = format!("{stem}.n.bin");
        fs::write(dir.join(&file), contents).unwrap();
        let (bytes, sha256) = digest(&dir.join(&file)).unwrap();
        let manifest = Manifest {
            file,
            bytes,
            sha256,
            tokens: 3,
        };
        fs::write(
            dir.join(format!("{stem}.json")),
            manifest.to_json().to_string(),
        )
        .unwrap();
        manifest
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut left: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        left
    }

    #[test]
    fn the_digest_tells_a_file_cut_short_grown_or_changed_at_either_end() {
        let dir = temp_dir();
        let path = dir.join("slot.bin");
        let saved: Vec<u8> = (0..3 * DIGEST_SPAN).map(|i| (i % 251) as u8).collect();
        fs::write(&path, &saved).unwrap();
        let original = digest(&path).unwrap();
        assert_eq!(original.0, saved.len() as u64);
        let mut changed = saved.clone();
        changed[10] ^= 1;
        fs::write(&path, &changed).unwrap();
        assert_ne!(digest(&path).unwrap(), original, "the header changed");
        let mut changed = saved.clone();
        *changed.last_mut().unwrap() ^= 1;
        fs::write(&path, &changed).unwrap();
        assert_ne!(digest(&path).unwrap(), original, "the end changed");
        fs::write(&path, &saved[..saved.len() - 1]).unwrap();
        assert_ne!(digest(&path).unwrap(), original, "cut short");
        fs::write(&path, &saved).unwrap();
        assert_eq!(digest(&path).unwrap(), original);
        fs::write(&path, b"").unwrap();
        assert_eq!(
            digest(&path).unwrap().0,
            0,
            "an empty file has a digest too"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_manifest_is_named_by_the_identity() {
        let dir = PathBuf::from("/cache/prompts");
        let a = PromptCache::new(dir.clone(), "model a|n_ctx 8192", 1);
        let b = PromptCache::new(dir.clone(), "model a|n_ctx 4096", 1);
        assert_ne!(a.manifest_path(), b.manifest_path());
        let again = PromptCache::new(dir, "model a|n_ctx 8192", 3);
        assert_eq!(a.manifest_path(), again.manifest_path());
    }

    #[test]
    fn a_manifest_names_a_file_beside_it_and_nothing_else() {
        let manifest =
            |file: &str| json!({"file": file, "bytes": 1, "sha256_of_ends": "ab", "tokens": 1});
        assert!(Manifest::from_json(&manifest("prompt-1.x.bin")).is_some());
        for forged in ["../model.gguf", "/etc/passwd", "a\\b", ".hidden"] {
            assert_eq!(Manifest::from_json(&manifest(forged)), None, "{forged}");
        }
        assert_eq!(Manifest::from_json(&json!({"file": "a.bin"})), None);
        assert_eq!(Manifest::from_json(&json!([1, 2])), None);
    }

    #[tokio::test]
    async fn a_torn_altered_or_forged_file_is_never_sent_to_the_server() {
        // The server's URL answers nothing: any request to it would fail differently.
        let unreachable = "http://127.0.0.1:9/v1";
        let dir = temp_dir();
        let cache = PromptCache::new(dir.clone(), "identity", 1);
        let stem = cache.stem.clone();

        // Torn: shorter than saved.
        let manifest = manifest_for(&dir, &stem, b"0123456789");
        fs::write(dir.join(&manifest.file), b"01234").unwrap();
        let error = cache.restore(unreachable).await.unwrap_err();
        assert!(error.contains("is not the file that was saved"), "{error}");
        assert!(names(&dir).is_empty(), "{:?}", names(&dir));

        // Altered: the same size, other bytes.
        let manifest = manifest_for(&dir, &stem, b"0123456789");
        fs::write(dir.join(&manifest.file), b"9876543210").unwrap();
        let error = cache.restore(unreachable).await.unwrap_err();
        assert!(error.contains("is not the file that was saved"), "{error}");
        assert!(names(&dir).is_empty());

        // Gone.
        let manifest = manifest_for(&dir, &stem, b"0123456789");
        fs::remove_file(dir.join(&manifest.file)).unwrap();
        let error = cache.restore(unreachable).await.unwrap_err();
        assert!(error.contains("cannot be read"), "{error}");
        assert!(names(&dir).is_empty());

        // Not a manifest at all.
        fs::write(cache.manifest_path(), b"{\"file\": 7").unwrap();
        let error = cache.restore(unreachable).await.unwrap_err();
        assert!(error.contains("is not a manifest"), "{error}");
        assert!(names(&dir).is_empty());

        // Nothing saved yet: nothing to do.
        assert_eq!(cache.restore(unreachable).await, Ok(Outcome::Nothing));
        fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn a_checked_file_the_server_refuses_is_removed() {
        let dir = temp_dir();
        let cache = PromptCache::new(dir.clone(), "identity", 2);
        manifest_for(&dir, &cache.stem.clone(), b"0123456789");
        let error = cache.restore("http://127.0.0.1:9/v1").await.unwrap_err();
        assert!(error.contains("was not restored into slot 0"), "{error}");
        assert!(names(&dir).is_empty());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn pruning_keeps_the_newest_manifests_their_files_and_young_orphans() {
        let dir = temp_dir();
        for i in 0..6u64 {
            let stem = format!("prompt-{i:016x}");
            let manifest = manifest_for(&dir, &stem, b"kv");
            age(&dir.join(format!("{stem}.json")), 600 - i * 60);
            age(&dir.join(manifest.file), 7200);
        }
        let young = dir.join("prompt-0000000000000009.young.bin");
        fs::write(&young, b"x").unwrap();
        let orphan = dir.join("prompt-0000000000000009.old.bin");
        fs::write(&orphan, b"x").unwrap();
        age(&orphan, 7200);
        fs::write(dir.join("other.txt"), b"kept").unwrap();

        PromptCache::new(dir.clone(), "any", 1).prune();
        let mut expected = vec!["other.txt".to_owned()];
        for i in 2..6u64 {
            expected.push(format!("prompt-{i:016x}.json"));
            expected.push(format!("prompt-{i:016x}.n.bin"));
        }
        expected.push("prompt-0000000000000009.young.bin".to_owned());
        expected.sort();
        assert_eq!(names(&dir), expected);
        fs::remove_dir_all(dir).unwrap();
    }
}
