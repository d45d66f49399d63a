//! The shape of the source tree, which ARCHITECTURE.md describes: no crate of the workspace has
//! an import circle between its files or between its modules, the runtime's top level stays
//! small, and the paths ARCHITECTURE.md names exist.
//!
//! A file imports another when it names an item through a `crate::` or `super::` path (a `use`,
//! or a path written in place), outside its inline modules (its tests). Two files that import each other,
//! directly or around a longer loop, are a circle: neither can be read or changed without the
//! other. The crate root's re-exports count as the root file, so code inside a crate names an
//! item by the module that defines it, not by the root. Between modules, each file counts as the
//! top-level module it is in: `engine` naming `observe` and `observe` naming `engine` is a circle
//! even when no two of their files name each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src`, by its module path (`["engine", "frame"]`).
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable source folder") {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("below src");
            let mut parts: Vec<String> = rel
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            out.insert(parts, rel.to_path_buf());
        }
    }
    out
}

/// The source without comments (line comments, doc comments and block comments) and string
/// literals, so that paths in prose or text are not read as imports.
fn code(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            _ => out.push(c),
        }
    }
    out
}

/// The spans of the inline modules of `code` (`mod tests { ... }`), braces included.
fn inline_modules(code: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("mod ") {
        let start = from + found;
        from = start + 4;
        let before = start.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        let rest = &code[from..];
        let name_end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if name_end == 0 || !rest[name_end..].trim_start().starts_with('{') {
            // `mod name;`: a module of its own file.
            continue;
        }
        let open = from + name_end + rest[name_end..].find('{').expect("just seen");
        let mut depth = 0usize;
        let mut end = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push(start..end);
    }
    out
}

/// The module paths a file names: `crate::a::b` (and each item of `crate::a::{b, c::d}`), and
/// `super::a`, relative to the file's module `at`, outside its inline modules.
fn named_paths(code: &str, at: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let inline = inline_modules(code);
    for base in ["crate", "super"] {
        let mut from = 0;
        while let Some(found) = code[from..].find(base) {
            let start = from + found;
            from = start + base.len();
            let before = start.checked_sub(1).map(|i| bytes[i]);
            if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
                continue;
            }
            if before == Some(b'$') {
                // A macro's output (`$crate::...`), resolved where the macro expands.
                continue;
            }
            if !code[from..].starts_with("::") {
                continue;
            }
            if base == "super" && inline.iter().any(|r| r.contains(&start)) {
                // `super` inside an inline module (its tests): the file itself.
                continue;
            }
            let mut path: Vec<String> = if base == "crate" {
                Vec::new()
            } else {
                at[..at.len().saturating_sub(1)].to_vec()
            };
            let rest = &code[from..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            let segments = rest[..end]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned);
            path.extend(segments);
            if rest[end..].starts_with('{') {
                let group_end = rest[end..].find('}').map_or(rest.len(), |i| end + i);
                for item in rest[end + 1..group_end].split(',') {
                    let item = item.split(" as ").next().unwrap_or("").trim();
                    if item.is_empty() || item == "self" {
                        continue;
                    }
                    let mut full = path.clone();
                    full.extend(
                        item.split("::")
                            .map(|s| s.trim_matches(|c| c == '{' || c == ' '))
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned),
                    );
                    out.push(full);
                }
                // The group's items are what is named, not the path before it.
                continue;
            }
            out.push(path);
        }
    }
    out
}

/// The file that defines the longest module prefix of `path`, or for an exported macro
/// (`crate::__retry_loop!`) the file that defines it.
fn file_of<'m>(
    modules: &'m BTreeMap<Vec<String>, PathBuf>,
    macros: &'m BTreeMap<String, PathBuf>,
    path: &[String],
) -> &'m PathBuf {
    if let Some(file) = path.first().and_then(|name| macros.get(name)) {
        return file;
    }
    (0..=path.len())
        .rev()
        .find_map(|n| modules.get(&path[..n]))
        .expect("the crate root is a module")
}

/// The import graph of the crate at `src`, file to files.
fn graph(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let modules = modules(src);
    let sources: BTreeMap<&PathBuf, String> = modules
        .values()
        .map(|file| {
            let source = std::fs::read_to_string(src.join(file)).expect("a readable file");
            (file, code(&source))
        })
        .collect();
    let mut macros = BTreeMap::new();
    for (file, code) in &sources {
        for (at, _) in code.match_indices("macro_rules!") {
            let name: String = code[at + "macro_rules!".len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            macros.insert(name, (*file).clone());
        }
    }
    let mut edges = BTreeMap::new();
    for (at, file) in &modules {
        let targets: BTreeSet<PathBuf> = named_paths(&sources[file], at)
            .iter()
            .map(|path| file_of(&modules, &macros, path).clone())
            .filter(|target| target != file)
            .collect();
        edges.insert(file.clone(), targets);
    }
    edges
}

/// The circles of `edges`: each strongly connected set of two or more files, and each file
/// that names an item through the crate root (`crate::Item`: the root declares every module,
/// so an arrow into it closes a loop through whatever it re-exports).
fn circles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    let reaches = |from: &PathBuf| -> BTreeSet<PathBuf> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(file) = todo.pop() {
            for next in edges.get(&file).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&PathBuf, BTreeSet<PathBuf>> =
        edges.keys().map(|f| (f, reaches(f))).collect();
    let mut out: Vec<Vec<PathBuf>> = Vec::new();
    let root = |f: &PathBuf| ["lib.rs", "main.rs"].iter().any(|r| f == Path::new(r));
    for (file, targets) in edges {
        if let Some(root) = targets.iter().find(|t| root(t)) {
            out.push(vec![file.clone(), root.clone()]);
        }
    }
    for (file, from_here) in &reach {
        let circle: Vec<PathBuf> = from_here
            .iter()
            .filter(|other| reach[other].contains(*file))
            .cloned()
            .collect();
        if circle.len() > 1 && !out.iter().any(|c| c.contains(file)) {
            out.push(circle);
        }
    }
    out
}

/// The import graph of `edges` between the crate's modules: each file counts as the top-level
/// module it belongs to (`engine/frame.rs` as `engine`, `attempt.rs` as `attempt`), and the
/// root's re-exports are left out (the file-level check already refuses an import through it).
fn modules_graph(
    edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let top = |f: &PathBuf| -> PathBuf {
        let first = f.components().next().expect("a file");
        Path::new(first.as_os_str()).with_extension("")
    };
    let root = |f: &PathBuf| ["lib.rs", "main.rs"].iter().any(|r| f == Path::new(r));
    let mut out: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (file, targets) in edges {
        if root(file) {
            continue;
        }
        let from = top(file);
        let into = out.entry(from.clone()).or_default();
        for target in targets.iter().filter(|t| !root(t)) {
            let to = top(target);
            if to != from {
                into.insert(to);
            }
        }
    }
    out
}

fn assert_no_circle(krate: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(krate)
        .join("src");
    let files = graph(&src);
    let mut found = circles(&files);
    let mut edges = files;
    let modules = modules_graph(&edges);
    found.extend(circles(&modules));
    edges.extend(modules);
    let described: Vec<String> = found
        .iter()
        .map(|circle| {
            circle
                .iter()
                .map(|f| {
                    let into: Vec<String> = edges[f]
                        .iter()
                        .filter(|t| circle.contains(t))
                        .map(|t| t.display().to_string())
                        .collect();
                    format!("  {} -> {}", f.display(), into.join(", "))
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert!(
        found.is_empty(),
        "import circles in {krate}:\n{}",
        described.join("\n\n")
    );
}

#[test]
fn the_runtime_has_no_import_circle() {
    assert_no_circle("retry-runtime");
}

#[test]
fn the_macros_have_no_import_circle() {
    assert_no_circle("retry-macros");
}

#[test]
fn the_simulator_has_no_import_circle() {
    assert_no_circle("retry-sim");
}

#[test]
fn the_checker_finds_a_circle() {
    let dir = std::env::temp_dir().join(format!("retry-layout-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(
        src.join("a.rs"),
        "use crate::b::c::X; // crate::lib\nconst S: &str = \"crate::lib\";\n",
    )
    .unwrap();
    std::fs::write(src.join("b/mod.rs"), "pub mod c;\n").unwrap();
    std::fs::write(
        src.join("b/c.rs"),
        "pub struct X;\nfn f() { crate::a::g() }\n",
    )
    .unwrap();
    let edges = graph(&src);
    let found = circles(&edges);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        vec![vec![PathBuf::from("a.rs"), PathBuf::from("b/c.rs")]]
    );
    assert!(
        edges[&PathBuf::from("a.rs")].len() == 1,
        "comments and strings name nothing"
    );
}

#[test]
fn the_checker_reads_super_in_a_function_and_not_in_an_inline_module() {
    // b/c.rs names b/d.rs at its top level; b/d.rs names b/c.rs inside a function (indented),
    // a circle; and b/d.rs's tests name `super::*`, the file itself.
    let dir = std::env::temp_dir().join(format!("retry-layout-super-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod b;\n").unwrap();
    std::fs::write(src.join("b/mod.rs"), "mod c;\nmod d;\n").unwrap();
    std::fs::write(src.join("b/c.rs"), "use super::d::D;\npub fn site() {}\n").unwrap();
    std::fs::write(
        src.join("b/d.rs"),
        "pub struct D;\nimpl D {\n    fn f() {\n        super::c::site()\n    }\n}\n\
         #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::c::site;\n}\n",
    )
    .unwrap();
    let edges = graph(&src);
    let found = circles(&edges);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        vec![vec![PathBuf::from("b/c.rs"), PathBuf::from("b/d.rs")]]
    );
    assert_eq!(
        edges[&PathBuf::from("b/d.rs")],
        BTreeSet::from([PathBuf::from("b/c.rs")])
    );
}

#[test]
fn the_checker_finds_a_circle_between_modules() {
    // a/x.rs names b/y.rs and b/z.rs names a/w.rs: no two files import each other, but the
    // modules `a` and `b` do.
    let dir = std::env::temp_dir().join(format!("retry-layout-mod-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "mod w;\nmod x;\n").unwrap();
    std::fs::write(src.join("b/mod.rs"), "mod y;\nmod z;\n").unwrap();
    std::fs::write(src.join("a/x.rs"), "use crate::b::y::Y;\n").unwrap();
    std::fs::write(src.join("a/w.rs"), "pub struct W;\n").unwrap();
    std::fs::write(src.join("b/y.rs"), "pub struct Y;\n").unwrap();
    std::fs::write(src.join("b/z.rs"), "use crate::a::w::W;\n").unwrap();
    let files = graph(&src);
    let modules = modules_graph(&files);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(circles(&files).is_empty(), "no circle between files");
    assert_eq!(
        circles(&modules),
        vec![vec![PathBuf::from("a"), PathBuf::from("b")]]
    );
}

#[test]
fn the_runtime_keeps_a_small_top_level() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("retry-runtime/src");
    let top: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        top.len() <= 12,
        "{} files directly in retry-runtime/src (at most 12; give a new part a folder): {top:?}",
        top.len()
    );
}

/// Every file of the workspace's sources, tests, benches and docs, by its path from the root
/// (`retry-runtime/src/engine/mod.rs`), leaving build output and VCS data out.
fn workspace_files() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable folder") {
            let path = entry.expect("a readable entry").path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if matches!(name.as_deref(), Some("target" | ".git")) {
                continue;
            }
            let rel = path.strip_prefix(root).expect("below the root");
            let rel = rel.to_string_lossy().replace('\\', "/");
            if path.is_dir() {
                out.push(format!("{rel}/"));
                dirs.push(path);
            } else {
                out.push(rel);
            }
        }
    }
    out
}

/// The paths ARCHITECTURE.md names (`engine/mod.rs`, `protect/`, `tests/workspace/layout.rs`)
/// exist: each is a file or folder of the workspace, named from the root or from a folder the
/// text is about (`engine/mod.rs` under `retry-runtime/src/`). Placeholders in capitals
/// (`NAME.rs`) stand for any.
#[test]
fn architecture_names_paths_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let files = workspace_files();
    let mut missing = Vec::new();
    for (i, quoted) in text.split('`').enumerate() {
        // Inside backticks: every other piece.
        if i % 2 == 0 || quoted.contains(char::is_whitespace) || quoted.contains("NAME") {
            continue;
        }
        let is_path = [".rs", ".md", ".toml", ".sh", "/"]
            .iter()
            .any(|end| quoted.ends_with(end))
            && quoted.chars().next().is_some_and(char::is_alphanumeric)
            && !quoted.contains("::");
        if !is_path {
            continue;
        }
        let found = files
            .iter()
            .any(|f| f == quoted || f.ends_with(&format!("/{quoted}")));
        if !found {
            missing.push(quoted.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}
