//! The README's two commands share one build: `cargo run --example react_agent` resolves the
//! features of this package's dependencies alone, `cargo test --workspace` those of every member
//! together, and a dependency built with other features is built again, with everything above it.
//! The root `Cargo.toml`'s "workspace hack" dev-dependencies turn on here what the other members
//! turn on; this test fails when a change to any member's dependencies leaves them out of step,
//! naming the dependency and the features to add.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each dependency's feature sets (one per build it appears in, host or target) in `cargo tree`
/// for the given package selection.
fn features(selection: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["tree", "--prefix", "none", "-e", "normal,build,dev"])
        .args(["--format", "{p} [{f}]"])
        .args(selection)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        output.status.success(),
        "cargo tree {selection:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut sets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        // `name vX.Y.Z (path)? [f1,f2]`, sometimes followed by ` (*)`.
        let Some((package, rest)) = line.split_once(" [") else {
            continue;
        };
        let Some((features, _)) = rest.split_once(']') else {
            continue;
        };
        let mut words = package.split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            continue;
        };
        sets.entry(format!("{name} {version}"))
            .or_default()
            .insert(features.to_owned());
    }
    sets
}

#[test]
fn the_main_example_builds_its_dependencies_as_the_test_command_does() {
    let example = features(&["-p", "signet-suite"]);
    let workspace = features(&["--workspace"]);
    assert!(
        example.len() > 100,
        "cargo tree listed too little: {example:?}"
    );
    let mut apart = Vec::new();
    for (package, sets) in &example {
        for set in sets {
            if !workspace.get(package).is_some_and(|ws| ws.contains(set)) {
                apart.push(format!(
                    "{package}: [{set}] for the example, {:?} for the workspace",
                    workspace.get(package)
                ));
            }
        }
    }
    assert!(
        apart.is_empty(),
        "these dependencies are built with other features by `cargo run --example react_agent` \
         than by `cargo test --workspace`, so the test command builds them again: add the \
         workspace's features to the root Cargo.toml's workspace-hack dev-dependencies:\n{}",
        apart.join("\n")
    );
}
