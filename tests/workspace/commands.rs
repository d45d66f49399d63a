//! Every cargo command the Markdown files show runs as written from the workspace's root: each
//! `cargo ...` in README.md, ARCHITECTURE.md, BENCHMARKS.md, RELIABILITY.md, SIMULATION.md and
//! tests/README.md (a line of a code block, or a code span) names packages, targets (`--test`,
//! `--example`, `--bench`, `--bin`) and features that exist, as `cargo metadata` reports them.
//! A command without `-p` or `--workspace` selects the workspace's default member, as it does
//! when typed at the root, so a target that moved to another package leaves no stale command.

use super::root;
use std::collections::{BTreeMap, BTreeSet};

/// What `cargo metadata` says of a package: its targets by kind, and its features.
#[derive(Debug, Default)]
struct Package {
    targets: BTreeMap<String, BTreeSet<String>>,
    features: BTreeSet<String>,
}

/// The workspace's packages by name, and its default members.
struct Workspace {
    packages: BTreeMap<String, Package>,
    default: Vec<String>,
}

fn workspace() -> Workspace {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("its JSON");
    let mut packages = BTreeMap::new();
    let mut ids = BTreeMap::new();
    for p in meta["packages"].as_array().expect("packages") {
        let name = p["name"].as_str().expect("a name").to_owned();
        ids.insert(p["id"].as_str().expect("an id").to_owned(), name.clone());
        let mut package = Package::default();
        for t in p["targets"].as_array().expect("targets") {
            let target = t["name"].as_str().expect("a target name").to_owned();
            for kind in t["kind"].as_array().expect("kinds") {
                let kind = kind.as_str().expect("a kind").to_owned();
                package
                    .targets
                    .entry(kind)
                    .or_default()
                    .insert(target.clone());
            }
        }
        for f in p["features"].as_object().expect("features").keys() {
            package.features.insert(f.clone());
        }
        packages.insert(name, package);
    }
    let default = meta["workspace_default_members"]
        .as_array()
        .expect("default members")
        .iter()
        .map(|id| ids[id.as_str().expect("an id")].clone())
        .collect();
    Workspace { packages, default }
}

/// The cargo commands of a Markdown text: each line of a fenced block, and each code span,
/// that starts with `cargo` (after environment assignments such as `RETRY_FUZZ_CASES=1000000`),
/// with lines ending in `\` joined to the next and a shell comment cut off.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            let line = line.trim();
            let joined = format!("{pending}{}", line.trim_end_matches('\\').trim_end());
            if line.ends_with('\\') {
                pending = joined + " ";
                continue;
            }
            pending.clear();
            let joined = joined.split(" # ").next().unwrap_or("").trim().to_owned();
            if let Some(c) = command(&joined) {
                out.push(c);
            }
        } else {
            for (i, span) in line.split('`').enumerate() {
                if i % 2 == 1
                    && let Some(c) = command(span)
                {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// `text` from its `cargo`, if it is a command: `cargo` first, or after `NAME=value`s.
fn command(text: &str) -> Option<String> {
    let mut words = text.split_whitespace().peekable();
    while words
        .peek()
        .is_some_and(|w| w.contains('=') && !w.starts_with('-'))
    {
        words.next();
    }
    if words.next() != Some("cargo") {
        return None;
    }
    Some(text[text.find("cargo")?..].trim().to_owned())
}

/// What is wrong with `command` against `ws`, if anything.
fn check(ws: &Workspace, command: &str) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    // Placeholders (`--test NAME`, `--out DIR`) stand for any.
    let placeholder = |w: &str| w.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    let mut packages: Vec<String> = Vec::new();
    let mut workspace = false;
    let mut wanted: Vec<(&str, &str)> = Vec::new();
    let mut features: Vec<&str> = Vec::new();
    let mut i = 1;
    while i < words.len() {
        let word = words[i];
        let value = words.get(i + 1).copied();
        match word {
            "--" => break,
            "-p" | "--package" => {
                packages.push(value?.to_owned());
                i += 1;
            }
            "--workspace" | "--all" => workspace = true,
            "--test" | "--example" | "--bench" | "--bin" => {
                let kind = &word[2..];
                // `cargo test --test` alone lists the targets.
                if let Some(v) = value.filter(|v| !v.starts_with('-')) {
                    wanted.push((kind, v));
                    i += 1;
                }
            }
            "--features" | "-F" => {
                features.extend(value?.split(','));
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    for p in &packages {
        if !ws.packages.contains_key(p) {
            return Some(format!("no package `{p}`"));
        }
    }
    let selected: Vec<&String> = if workspace {
        ws.packages.keys().collect()
    } else if packages.is_empty() {
        ws.default.iter().collect()
    } else {
        packages.iter().collect()
    };
    for (kind, name) in wanted {
        if placeholder(name) {
            continue;
        }
        let found = selected.iter().any(|p| {
            ws.packages[*p]
                .targets
                .get(kind)
                .is_some_and(|t| t.contains(name))
        });
        if !found {
            let names: Vec<&str> = selected.iter().map(|p| p.as_str()).collect();
            return Some(format!("no {kind} target `{name}` in {names:?}"));
        }
    }
    for feature in features {
        let (package, feature) = match feature.split_once('/') {
            Some((p, f)) => (vec![p.to_owned()], f),
            None => (selected.iter().map(|p| (*p).clone()).collect(), feature),
        };
        if placeholder(feature) {
            continue;
        }
        let found = package.iter().any(|p| {
            ws.packages
                .get(p)
                .is_some_and(|p| p.features.contains(feature))
        });
        if !found {
            return Some(format!("no feature `{feature}` in {package:?}"));
        }
    }
    None
}

#[test]
fn every_command_the_markdown_files_show_names_what_exists() {
    let ws = workspace();
    let mut checked = 0;
    let mut stale = Vec::new();
    for file in [
        "README.md",
        "ARCHITECTURE.md",
        "BENCHMARKS.md",
        "RELIABILITY.md",
        "SIMULATION.md",
        "tests/README.md",
    ] {
        let text = std::fs::read_to_string(root().join(file)).expect("a Markdown file");
        for c in commands(&text) {
            checked += 1;
            if let Some(problem) = check(&ws, &c) {
                stale.push(format!("{file}: `{c}`: {problem}"));
            }
        }
    }
    assert!(checked > 50, "only {checked} commands found");
    assert!(
        stale.is_empty(),
        "commands that do not run as written:\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_checker_reads_commands_as_a_shell_would() {
    let text = "Run `cargo test --workspace` or\n\n```sh\nRETRY_X=1 cargo test --release -p a \\\n    --test t -- --nocapture  # why\ncargo run --example e   # a comment\n```\n";
    assert_eq!(
        commands(text),
        [
            "cargo test --workspace",
            "cargo test --release -p a --test t -- --nocapture",
            "cargo run --example e",
        ]
    );
    let mut a = Package::default();
    a.targets
        .entry("test".into())
        .or_default()
        .insert("t".into());
    a.targets
        .entry("example".into())
        .or_default()
        .insert("e".into());
    a.features.insert("f".into());
    let ws = Workspace {
        packages: BTreeMap::from([("a".to_owned(), a), ("b".to_owned(), Package::default())]),
        default: vec!["b".to_owned()],
    };
    assert_eq!(check(&ws, "cargo test -p a --test t --features f"), None);
    assert_eq!(check(&ws, "cargo test --workspace --test t"), None);
    assert_eq!(check(&ws, "cargo test --test NAME"), None);
    // From the root, without `-p`: the default member, which has no such test.
    assert_eq!(
        check(&ws, "cargo test --test t").as_deref(),
        Some("no test target `t` in [\"b\"]")
    );
    assert_eq!(
        check(&ws, "cargo run -p c").as_deref(),
        Some("no package `c`")
    );
    assert_eq!(
        check(&ws, "cargo test -p a --features g").as_deref(),
        Some("no feature `g` in [\"a\"]")
    );
}
