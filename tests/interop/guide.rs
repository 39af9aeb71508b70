//! The user guide compiles for a reader: every Rust snippet of the README and of `docs/` is a
//! doctest of `tests/guide`, a crate outside the workspace with only the dependencies the guide
//! tells the reader to add. The pages that build on the getting-started project are tested with
//! its `[dependencies]` alone; the pages with a `[dependencies]` block of their own are tested
//! together, each turning on what its block adds (a feature named after the page).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One dependency line: its features and whether it is optional.
#[derive(Debug, Clone, Default, PartialEq)]
struct Dependency {
    features: BTreeSet<String>,
    optional: bool,
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
            let optional = spec.replace(' ', "").contains("optional=true");
            (name.to_owned(), Dependency { features, optional })
        })
        .collect()
}

/// Each guide page's `[dependencies]` blocks, merged per page (pages without one left out).
fn pages() -> BTreeMap<String, BTreeMap<String, Dependency>> {
    let mut files = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut pages = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let mut deps: BTreeMap<String, Dependency> = BTreeMap::new();
        for block in text.split("```toml").skip(1) {
            let block = block.split("```").next().unwrap_or_default();
            for (name, dependency) in dependencies(block) {
                let entry = deps.entry(name).or_default();
                entry.features.extend(dependency.features);
            }
        }
        if !deps.is_empty() {
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            pages.insert(stem, deps);
        }
    }
    pages
}

/// The guide crate's manifest.
fn manifest() -> String {
    std::fs::read_to_string(root().join("tests/guide/Cargo.toml")).unwrap()
}

#[test]
fn the_guide_crate_has_the_dependencies_the_guide_names_and_no_others() {
    let mut pages = pages();
    let base = pages
        .remove("getting-started")
        .expect("getting-started.md says which crates to add");
    let manifest = manifest();
    let crate_deps = dependencies(&manifest);
    let plain: BTreeMap<String, Dependency> = crate_deps
        .iter()
        .filter(|(_, d)| !d.optional)
        .map(|(n, d)| (n.clone(), d.clone()))
        .collect();
    assert_eq!(
        plain, base,
        "tests/guide/Cargo.toml's plain dependencies must be getting-started.md's"
    );
    let features: BTreeMap<&str, BTreeSet<String>> = table(&manifest, "features")
        .into_iter()
        .filter(|(name, _)| *name != "page")
        .map(|(name, value)| (name.trim_matches('"'), list(value)))
        .collect();
    assert_eq!(
        features.keys().copied().collect::<Vec<_>>(),
        pages.keys().map(String::as_str).collect::<Vec<_>>(),
        "one feature for each page with a [dependencies] block of its own"
    );
    let mut optional: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (page, deps) in &pages {
        let mut expected: BTreeSet<String> = ["page".to_owned()].into();
        for (name, dependency) in deps {
            match base.get(name) {
                Some(plain) => expected.extend(
                    dependency
                        .features
                        .difference(&plain.features)
                        .map(|f| format!("{name}/{f}")),
                ),
                None => {
                    expected.insert(format!("dep:{name}"));
                    optional
                        .entry(name.clone())
                        .or_default()
                        .extend(dependency.features.clone());
                }
            }
        }
        assert_eq!(
            features[page.as_str()],
            expected,
            "the feature `{page}` must turn on what {page}.md adds to getting-started's crates"
        );
    }
    for (name, dependency) in crate_deps.iter().filter(|(_, d)| d.optional) {
        assert_eq!(
            Some(&dependency.features),
            optional.get(name),
            "the optional dependency {name} must have the features the pages name"
        );
    }
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
    // Two runs: the pages that build on the getting-started project without features (exactly
    // its dependencies), then the pages with a `[dependencies]` block of their own together, each
    // with what its block adds. Each run rebuilds the dependencies whose features change: from an
    // empty target directory on 2 cores these two runs take 283 s, where a run per page (five)
    // took 433 s. The price: a page that used a crate only another page adds would pass the
    // second run; the manifest check above still holds each page's block to what it names.
    let manifest = manifest();
    let pages: Vec<&str> = table(&manifest, "features")
        .into_iter()
        .map(|(name, _)| name.trim_matches('"'))
        .filter(|name| *name != "page")
        .collect();
    let runs = [None, Some(pages.join(","))];
    for feature in runs {
        let mut command = Command::new(&cargo);
        command
            .args(["test", "--doc", "--manifest-path"])
            .arg(guide.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", target_dir())
            .current_dir(&guide);
        if let Some(feature) = &feature {
            command.args(["--features", feature]);
        }
        let output = command.output().expect("run cargo");
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
        let tail = |s: &str| {
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(150)..].join("\n")
        };
        let features = feature
            .as_deref()
            .map(|f| format!(" --features {f}"))
            .unwrap_or_default();
        assert!(
            output.status.success(),
            "the guide's snippets fail in a reader's crate (`cargo test --doc --manifest-path \
             tests/guide/Cargo.toml{features}`):\n{}\n{}",
            tail(&stderr),
            tail(&stdout)
        );
        assert!(
            stdout.contains("test result: ok.") && !stdout.contains(" 0 passed"),
            "no doctests ran{features}:\n{stdout}"
        );
    }
}
