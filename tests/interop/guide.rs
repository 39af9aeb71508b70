//! The user guide compiles for a reader: every Rust snippet of the README and of `docs/` is a
//! doctest of a crate with only the dependencies the guide tells the reader to add. The pages that
//! build on the getting-started project alone are doctests of `tests/guide`, a crate outside the
//! workspace with exactly its `[dependencies]` (features included), run here. The pages with a
//! `[dependencies]` block of their own are doctests of `tests/guide-pages`, a workspace member
//! with getting-started's crates and every crate those pages add, run by `cargo test --workspace`
//! itself; as a member it reuses the workspace's build, and features other members turn on reach
//! it (its crates are still only the ones the pages name).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One dependency line: its features.
#[derive(Debug, Clone, Default, PartialEq)]
struct Dependency {
    features: BTreeSet<String>,
}

/// The strings of a TOML array written on one line: `["a", "b"]`.
fn list(text: &str) -> BTreeSet<String> {
    text.split_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(items, _)| {
            items
                .split(',')
                .map(|f| f.trim().trim_matches('"').to_owned())
                .filter(|f| !f.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// `name = value` lines of the TOML table `[table]` in `toml`.
fn table<'a>(toml: &'a str, table: &str) -> Vec<(&'a str, &'a str)> {
    let mut inside = false;
    let mut lines = Vec::new();
    for line in toml.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.starts_with('[') {
            inside = line == format!("[{table}]");
        } else if let Some((name, value)) = line.split_once('=').filter(|_| inside) {
            lines.push((name.trim(), value.trim()));
        }
    }
    lines
}

fn dependencies(toml: &str) -> BTreeMap<String, Dependency> {
    table(toml, "dependencies")
        .into_iter()
        .map(|(name, spec)| {
            let features = spec
                .split_once("features")
                .map(|(_, rest)| list(rest))
                .unwrap_or_default();
            (name.to_owned(), Dependency { features })
        })
        .collect()
}

/// The guide's pages: the README and every `docs/*.md`, each with its name (the file stem) and
/// its text.
fn guide_pages() -> Vec<(String, String)> {
    let mut files = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files
        .into_iter()
        .map(|file| {
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            (stem, std::fs::read_to_string(&file).unwrap())
        })
        .collect()
}

/// Adds `more` to `deps`: a crate both name has the features of both.
fn merge(deps: &mut BTreeMap<String, Dependency>, more: BTreeMap<String, Dependency>) {
    for (name, dependency) in more {
        let entry = deps.entry(name).or_default();
        entry.features.extend(dependency.features);
    }
}

/// Each guide page's `[dependencies]` blocks, merged per page (pages without one left out).
fn pages() -> BTreeMap<String, BTreeMap<String, Dependency>> {
    let mut pages = BTreeMap::new();
    for (page, text) in guide_pages() {
        let mut deps = BTreeMap::new();
        for block in text.split("```toml").skip(1) {
            merge(
                &mut deps,
                dependencies(block.split("```").next().unwrap_or_default()),
            );
        }
        if !deps.is_empty() {
            pages.insert(page, deps);
        }
    }
    pages
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

#[test]
fn the_guide_crates_have_the_dependencies_the_guide_names_and_no_others() {
    let mut pages = pages();
    let base = pages
        .remove("getting-started")
        .expect("getting-started.md says which crates to add");
    assert_eq!(
        dependencies(&read("tests/guide/Cargo.toml")),
        base,
        "tests/guide/Cargo.toml's dependencies must be getting-started.md's"
    );
    // The pages that add crates build on the getting-started project: their crate has its
    // dependencies and every crate the pages add, each with every feature a page names.
    let mut expected = base;
    for deps in pages.values() {
        merge(&mut expected, deps.clone());
    }
    assert_eq!(
        dependencies(&read("tests/guide-pages/Cargo.toml")),
        expected,
        "tests/guide-pages/Cargo.toml's dependencies must be getting-started.md's and those of \
         the pages with a [dependencies] block of their own ({:?})",
        pages.keys().collect::<Vec<_>>()
    );
}

/// The pages (`README` or a `docs/` file stem) a guide crate's `lib.rs` includes.
fn included(lib: &str) -> BTreeSet<String> {
    read(lib)
        .lines()
        .filter_map(|line| line.split_once("include_str!(\"../../")?.1.split_once('"'))
        .map(|(path, _)| {
            path.trim_start_matches("docs/")
                .trim_end_matches(".md")
                .to_owned()
        })
        .collect()
}

#[test]
fn every_page_with_rust_snippets_is_tested_in_the_crate_its_dependencies_call_for() {
    let with_blocks: BTreeSet<String> = pages()
        .into_keys()
        .filter(|page| page != "getting-started")
        .collect();
    let (expected_pages, expected_guide): (BTreeSet<String>, BTreeSet<String>) = guide_pages()
        .into_iter()
        .filter(|(_, text)| text.contains("```rust"))
        .map(|(page, _)| page)
        .partition(|page| with_blocks.contains(page));
    // A page without Rust snippets may be included too (it has none to test).
    let guide = included("tests/guide/lib.rs");
    let with_crates = included("tests/guide-pages/lib.rs");
    assert_eq!(
        expected_guide.difference(&guide).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "tests/guide/lib.rs must include every page with Rust snippets that adds no crates"
    );
    assert_eq!(
        guide.intersection(&with_blocks).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "pages that add crates belong in tests/guide-pages/lib.rs, not tests/guide/lib.rs"
    );
    assert_eq!(
        with_crates, expected_pages,
        "tests/guide-pages/lib.rs must include every page that adds crates, and only those"
    );
}

/// The target directory of this build: the guide's crate builds into it too, so that what the
/// two share (same versions, same features) is compiled once.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_absolute() {
                dir
            } else {
                root().join(dir)
            }
        })
        .unwrap_or_else(|| root().join("target"))
}

#[test]
fn every_snippet_of_the_guide_compiles_and_runs_in_a_readers_crate() {
    let guide = root().join("tests/guide");
    // The workspace's versions: the guide is tested against what the workspace is tested with.
    std::fs::copy(root().join("Cargo.lock"), guide.join("Cargo.lock")).unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // From an empty target directory on 2 cores this build took 126 s; the workspace's test
    // build leaves some of its dependencies built (those with the same features).
    let output = Command::new(&cargo)
        .args(["test", "--doc", "--manifest-path"])
        .arg(guide.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir())
        .current_dir(&guide)
        .output()
        .expect("run cargo");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    let tail = |s: &str| {
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(150)..].join("\n")
    };
    assert!(
        output.status.success(),
        "the guide's snippets fail in a reader's crate (`cargo test --doc --manifest-path \
         tests/guide/Cargo.toml`):\n{}\n{}",
        tail(&stderr),
        tail(&stdout)
    );
    assert!(
        stdout.contains("test result: ok.") && !stdout.contains(" 0 passed"),
        "no doctests ran:\n{stdout}"
    );
}
