//! The layering check: the crate's top-level modules form the layers of the table in `lib.rs`'s
//! module docs, and a module uses only modules of its own layer or of layers below, with no
//! cycle anywhere.
//!
//! The check reads `src/` as text: each file's `crate::x` paths (grouped `use crate::{a::..,
//! b::..}` included, over several lines), and `super::x` paths that climb to the crate root,
//! name the top-level modules it uses; names re-exported by `lib.rs` (`crate::Result`) count
//! as their module. Comments and test code (`#[cfg(test)]` modules, inline or in their own
//! files, and `tests` directories) are not read: tests may use the whole crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Edges that break the layering today, each with why and what removes it. The check fails
/// when one of them is no longer needed, so the list only shrinks.
const KNOWN_EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// A source file: its path relative to `src/` (`/`-separated) and its text.
struct Source {
    path: String,
    text: String,
}

/// The layers of `lib.rs`'s table (`//! | layer | modules | ... |`), lowest first.
fn parse_layers(lib: &str) -> Vec<(String, Vec<String>)> {
    let mut layers = Vec::new();
    for line in lib.lines() {
        let Some(row) = line.trim().strip_prefix("//!").map(str::trim) else {
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // `| layer | modules | role |` splits into ["", layer, modules, role, ""]
        if cells.len() < 4 || !cells[0].is_empty() {
            continue;
        }
        let (name, modules) = (cells[1], cells[2]);
        if name == "layer" || name.starts_with('-') {
            continue;
        }
        let modules = modules
            .split(',')
            .map(|m| m.trim().trim_matches('`').to_string())
            .collect();
        layers.push((name.to_string(), modules));
    }
    layers
}

/// The module declarations (`mod x;`, `pub mod x;`, `pub(crate) mod x;`) of `lib.rs`.
fn declared_modules(lib: &str) -> BTreeSet<String> {
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub ")
                .or_else(|| l.strip_prefix("pub(crate) "))
                .unwrap_or(l);
            rest.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect()
}

/// Items `lib.rs` re-exports (`pub use m::{A, B};`, `pub use m::a;`) and their module.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for l in lib.lines() {
        let Some(path) = l
            .trim()
            .strip_prefix("pub use ")
            .and_then(|p| p.strip_suffix(';'))
        else {
            continue;
        };
        let Some((module, items)) = path.split_once("::") else {
            continue;
        };
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.split(" as ").last().unwrap_or(item).trim();
            let name = name.rsplit("::").next().unwrap_or(name);
            out.insert(name.to_string(), module.to_string());
        }
    }
    out
}

/// The module path of a file (`write/file_writer/mod.rs` → `[write, file_writer]`).
fn module_path(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// Files that are test code: under a `tests` directory, or declared `#[cfg(test)] mod x;`
/// (with everything below them), or `#[cfg(test)] #[path = "f.rs"] mod x;` (the file `f.rs`
/// beside the declaring file).
fn test_files(sources: &[Source]) -> BTreeSet<String> {
    let mut test_modules: Vec<Vec<String>> = Vec::new();
    let mut test_paths: BTreeSet<String> = BTreeSet::new();
    for s in sources {
        let lines: Vec<&str> = s.text.lines().map(str::trim).collect();
        for w in lines.windows(2) {
            let file = w[1]
                .strip_prefix("#[path = \"")
                .and_then(|rest| rest.strip_suffix("\"]"));
            if let (true, Some(file)) = (w[0] == "#[cfg(test)]", file) {
                let dir = s.path.rsplit_once('/').map_or("", |(d, _)| d);
                test_paths.insert(if dir.is_empty() {
                    file.to_string()
                } else {
                    format!("{dir}/{file}")
                });
            }
            if w[0] == "#[cfg(test)]" {
                let decl = w[1]
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub ");
                if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';')) {
                    let mut m = module_path(&s.path);
                    m.push(name.to_string());
                    test_modules.push(m);
                }
            }
        }
    }
    sources
        .iter()
        .filter(|s| {
            let m = module_path(&s.path);
            s.path.split('/').any(|c| c == "tests")
                || test_paths.contains(&s.path)
                || test_modules.iter().any(|t| m.starts_with(t))
        })
        .map(|s| s.path.clone())
        .collect()
}

/// `text` without comments and without `#[cfg(test)]` items: an inline module (up to its
/// closing `}` at column 0) or a single-line item.
fn code_only(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let Some(item) = lines.next() else { break };
            if item.trim_end().ends_with('{') && !item.starts_with(' ') {
                for l in lines.by_ref() {
                    if l == "}" {
                        break;
                    }
                }
            } else if !item.trim_end().ends_with(';') {
                // an indented or multi-line item: skip up to its end at the same indentation
                let indent = item.len() - item.trim_start().len();
                for l in lines.by_ref() {
                    if l.len() - l.trim_start().len() == indent && l.trim_start().starts_with('}') {
                        break;
                    }
                }
            }
            continue;
        }
        out.push_str(strip_line_comment(line));
        out.push('\n');
    }
    out
}

/// `line` up to a `//` that is not inside a string literal.
fn strip_line_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

/// The first identifier of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of each top-level entry of a `{a::x, b::{y, z}}` group starting at
/// `s` (just after its `{`).
fn group_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                heads.push(ident(s[start..i].trim_start()).to_string());
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(ident(s[start..i].trim_start()).to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    heads.retain(|h| !h.is_empty());
    heads
}

/// The root-level names a file's code uses: after `crate::` (single or grouped) and after
/// `super::` chains that climb from `module` to the crate root.
fn root_names(code: &str, module: &[String]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut add = |rest: &str| {
        if let Some(group) = rest.strip_prefix('{') {
            names.extend(group_heads(group));
        } else {
            names.insert(ident(rest).to_string());
        }
    };
    for (i, _) in code.match_indices("crate::") {
        let prev = if i == 0 { b' ' } else { bytes[i - 1] };
        if prev == b'$' || prev == b'_' || prev.is_ascii_alphanumeric() {
            continue;
        }
        add(&code[i + "crate::".len()..]);
    }
    let mut i = 0;
    while let Some(found) = code[i..].find("super::") {
        let start = i + found;
        let prev = if start == 0 { b' ' } else { bytes[start - 1] };
        let mut end = start;
        let mut depth = 0;
        while code[end..].starts_with("super::") {
            end += "super::".len();
            depth += 1;
        }
        i = end;
        if prev == b':' || prev == b'_' || prev.is_ascii_alphanumeric() {
            continue;
        }
        if depth >= module.len() {
            add(&code[end..]);
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// Every violation of the layering in `sources` (paths relative to `src/`), `lib.rs` included.
fn check(sources: &[Source], exceptions: &[(&str, &str, &str)]) -> Vec<String> {
    let Some(lib) = sources.iter().find(|s| s.path == "lib.rs") else {
        return vec!["no lib.rs".to_string()];
    };
    let layers = parse_layers(&lib.text);
    let layer_of: BTreeMap<&str, (usize, &str)> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, (name, modules))| {
            modules
                .iter()
                .map(move |m| (m.as_str(), (i, name.as_str())))
        })
        .collect();
    let declared = declared_modules(&lib.text);
    let reexports = root_reexports(&lib.text);
    let mut problems = Vec::new();
    for m in &declared {
        if !layer_of.contains_key(m.as_str()) {
            problems.push(format!("module `{m}` is not in lib.rs's table of layers"));
        }
    }
    for m in layer_of.keys() {
        if !declared.contains(*m) {
            problems.push(format!(
                "lib.rs's table of layers names `{m}`, which is not a module of the crate"
            ));
        }
    }

    // edge (from, to) -> the files that make it
    let tests = test_files(sources);
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for s in sources
        .iter()
        .filter(|s| s.path != "lib.rs" && !tests.contains(&s.path))
    {
        let module = module_path(&s.path);
        let from = module[0].clone();
        for name in root_names(&code_only(&s.text), &module) {
            let to = if declared.contains(&name) {
                name
            } else if let Some(m) = reexports.get(&name) {
                m.clone()
            } else {
                continue;
            };
            if to != from {
                edges
                    .entry((from.clone(), to))
                    .or_default()
                    .push(s.path.clone());
            }
        }
    }
    for (from, to, _) in exceptions {
        if edges.remove(&(from.to_string(), to.to_string())).is_none() {
            problems.push(format!(
                "the known exception {from} -> {to} is gone: remove it from KNOWN_EXCEPTIONS"
            ));
        }
    }
    for ((from, to), files) in &edges {
        let (Some(&(lf, nf)), Some(&(lt, nt))) =
            (layer_of.get(from.as_str()), layer_of.get(to.as_str()))
        else {
            continue;
        };
        if lt > lf {
            problems.push(format!(
                "{}: `{from}` (layer {nf}) uses `{to}`, which is in a higher layer ({nt})",
                files
                    .iter()
                    .map(|f| format!("src/{f}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    for cycle in cycles(&edges) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                format!(
                    "{} -> {} (src/{})",
                    w[0],
                    w[1],
                    edges[&(w[0].clone(), w[1].clone())][0]
                )
            })
            .collect();
        problems.push(format!("cycle: {}", steps.join(", ")));
    }
    problems
}

/// One cycle (first node repeated at the end) per strongly connected component with more than
/// one module (Tarjan's algorithm, recursive: the graph has a few dozen nodes).
fn cycles(edges: &BTreeMap<(String, String), Vec<String>>) -> Vec<Vec<String>> {
    let mut succ: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        succ.entry(a).or_default().push(b);
        succ.entry(b).or_default();
    }
    struct Tarjan<'a> {
        succ: &'a BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        components: Vec<Vec<&'a str>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for &w in &self.succ[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut t = Tarjan {
        succ: &succ,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        components: Vec::new(),
    };
    for &v in succ.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    let mut out = Vec::new();
    for component in t.components.into_iter().filter(|c| c.len() > 1) {
        // walk inside the component from its smallest module until a module repeats
        let inside: BTreeSet<&str> = component.iter().copied().collect();
        let start = *inside.iter().next().unwrap();
        let mut path = vec![start];
        loop {
            let last = *path.last().unwrap();
            let next = succ[last]
                .iter()
                .copied()
                .find(|w| inside.contains(w))
                .unwrap();
            if let Some(pos) = path.iter().position(|p| *p == next) {
                let mut cycle: Vec<String> = path[pos..].iter().map(|s| s.to_string()).collect();
                cycle.push(next.to_string());
                out.push(cycle);
                break;
            }
            path.push(next);
        }
    }
    out
}

fn read_tree(root: &Path, dir: &Path, out: &mut Vec<Source>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_tree(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.push(Source {
                path: rel,
                text: fs::read_to_string(&path).unwrap(),
            });
        }
    }
}

#[test]
fn core_modules_follow_the_layers_of_lib_rs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read_tree(&root, &root, &mut sources);
    let problems = check(&sources, KNOWN_EXCEPTIONS);
    assert!(
        problems.is_empty(),
        "layering violations:\n{}",
        problems.join("\n")
    );
}

// The checker on small synthetic crates.

const LIB: &str = "//! | layer | modules | role |
//! |-------|---------|------|
//! | base | `io`, `util` | I/O |
//! | data | `read`, `write` | files |
//! | top | `commit` | commits |

pub mod commit;
pub mod io;
pub mod read;
mod util;
pub mod write;

pub use util::helper;
";

fn crate_of(files: &[(&str, &str)]) -> Vec<Source> {
    let mut sources = vec![Source {
        path: "lib.rs".into(),
        text: LIB.into(),
    }];
    sources.extend(files.iter().map(|(p, t)| Source {
        path: p.to_string(),
        text: t.to_string(),
    }));
    sources
}

fn problems(files: &[(&str, &str)]) -> Vec<String> {
    check(&crate_of(files), &[])
}

#[test]
fn a_clean_crate_passes() {
    let p = problems(&[
        ("io.rs", "pub fn open() {}"),
        (
            "read/mod.rs",
            "use crate::io::open;\nuse crate::write::x;\nmod data;",
        ),
        ("read/data.rs", "use super::super::io;\nuse super::sibling;"),
        (
            "commit.rs",
            "use crate::{io::open, read::r, write::{a, b}};",
        ),
    ]);
    assert_eq!(p, Vec::<String>::new());
}

#[test]
fn an_upward_edge_names_file_and_edge() {
    let p = problems(&[("io.rs", "use crate::read::Reader;")]);
    assert_eq!(
        p,
        vec!["src/io.rs: `io` (layer base) uses `read`, which is in a higher layer (data)"]
    );
}

#[test]
fn grouped_multi_line_uses_and_root_super_paths_count() {
    let grouped = problems(&[(
        "write/mod.rs",
        "use crate::{\n    io::open,\n    commit::{\n        Commit,\n    },\n};",
    )]);
    assert_eq!(grouped.len(), 1, "{grouped:?}");
    assert!(grouped[0].starts_with("src/write/mod.rs: `write` (layer data) uses `commit`"));
    let root_super = problems(&[("util.rs", "use super::write::W;")]);
    assert!(
        root_super[0].starts_with("src/util.rs: `util` (layer base) uses `write`"),
        "{root_super:?}"
    );
    let nested_super = problems(&[("io/local.rs", "use super::super::commit::C;")]);
    assert!(
        nested_super[0].starts_with("src/io/local.rs: `io` (layer base) uses `commit`"),
        "{nested_super:?}"
    );
}

#[test]
fn a_cycle_within_a_layer_is_reported() {
    let p = problems(&[
        ("read.rs", "use crate::write::W;"),
        ("write/mod.rs", "fn f() { crate::read::r(); }"),
    ]);
    assert_eq!(
        p,
        vec!["cycle: read -> write (src/read.rs), write -> read (src/write/mod.rs)"]
    );
}

#[test]
fn reexports_count_as_their_module() {
    let p = problems(&[
        ("util.rs", "pub fn helper() {}"),
        ("io.rs", "use crate::helper;\nuse crate::util as u;"),
    ]);
    assert_eq!(p, Vec::<String>::new());
    let up = check(
        &crate_of(&[("read.rs", "use crate::io;")])
            .into_iter()
            .map(|mut s| {
                if s.path == "lib.rs" {
                    s.text.push_str("pub use commit::Committer;\n");
                }
                s
            })
            .chain([Source {
                path: "io.rs".into(),
                text: "use crate::Committer;".into(),
            }])
            .collect::<Vec<_>>(),
        &[],
    );
    assert_eq!(
        up,
        vec!["src/io.rs: `io` (layer base) uses `commit`, which is in a higher layer (top)"]
    );
}

#[test]
fn comments_and_test_code_are_not_read() {
    let p = problems(&[
        ("io/mod.rs", "//! See [`crate::commit`].\nfn f() {} // crate::commit::x\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod inline {\n    use crate::commit::C;\n}\n#[cfg(test)]\nuse crate::commit::D;\nconst URL: &str = \"http://x\"; // crate::write"),
        ("io/tests.rs", "use crate::commit::C;"),
        ("io/tests/more.rs", "use crate::commit::C;"),
        ("read/format_tests.rs", "use crate::commit::C;"),
        ("read/mod.rs", "#[cfg(test)]\nmod format_tests;"),
        ("write/restore.rs", "#[cfg(test)]\n#[path = \"restore_tests.rs\"]\nmod tests;"),
        ("write/restore_tests.rs", "use crate::commit::C;"),
    ]);
    assert_eq!(p, Vec::<String>::new());
}

#[test]
fn modules_missing_from_the_table_and_stale_exceptions_fail() {
    let mut sources = crate_of(&[]);
    sources[0].text.push_str("pub mod extra;\n");
    assert_eq!(
        check(&sources, &[]),
        vec!["module `extra` is not in lib.rs's table of layers"]
    );
    let stale = check(&crate_of(&[]), &[("write", "commit", "why")]);
    assert_eq!(
        stale,
        vec!["the known exception write -> commit is gone: remove it from KNOWN_EXCEPTIONS"]
    );
    let allowed = check(
        &crate_of(&[("write.rs", "use crate::commit::C;")]),
        &[("write", "commit", "why")],
    );
    assert_eq!(allowed, Vec::<String>::new());
}
