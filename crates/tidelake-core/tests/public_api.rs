//! The public surface check: outside the crate, the core is its facade (`src/api.rs`).
//!
//! * `lib.rs` declares `pub` only the modules of [`PUBLIC_MODULES`]: `api`, and modules still
//!   public only because integration tests in `tests/` use internals of them (each with why);
//!   every other module is `pub(crate)` (or private), so the compiler keeps it internal.
//! * The Python binding (`crates/tidelake-python/src`) names the core only through
//!   `tidelake_core::api`, and there only the verbs of `api::ops` and value types, never the
//!   engine pieces those verbs assemble ([`ASSEMBLED_BY_OPS`]), which the facade does not
//!   re-export.
//!
//! Both read the sources as text, as `layering.rs` does.

use std::fs;
use std::path::Path;

/// The modules `lib.rs` may declare `pub`, with why. The list only shrinks: the check fails
/// when one of them is no longer `pub`.
const PUBLIC_MODULES: &[(&str, &str)] = &[
    ("api", "the facade"),
    (
        "datum_arrow",
        "tests/fixture_buckets.rs and tests/write_file_writer.rs compare values with it",
    ),
    (
        "io",
        "tests/expire_protocol.rs and tests/object_store_requests.rs count requests with \
         io::instrumented",
    ),
    (
        "read",
        "tests/read_data_file.rs and tests/write_file_writer.rs read single data files",
    ),
    (
        "test_support",
        "what the crate's tests share (only with cfg(test) or the test-support feature)",
    ),
    (
        "write",
        "tests/write_bucket.rs and tests/write_file_writer.rs test bucket routing and file writers",
    ),
];

/// Engine pieces only the verbs of `ops` assemble (each with the verbs that do): neither the
/// facade nor the binding names them.
const ASSEMBLED_BY_OPS: &[(&str, &str)] = &[(
    "ReadContext",
    "ops::Read and ops::Changes (columns, filter, selectors, batch size)",
)];

/// The names of the `pub mod x;` declarations of `lib`.
fn public_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';'))
        .map(str::to_string)
        .collect()
}

/// Problems with the public modules of `lib` against `allowed`.
fn module_problems(lib: &str, allowed: &[(&str, &str)]) -> Vec<String> {
    let public = public_modules(lib);
    let mut problems: Vec<String> = public
        .iter()
        .filter(|m| !allowed.iter().any(|(a, _)| a == m))
        .map(|m| {
            format!("lib.rs declares `pub mod {m}`: make it pub(crate) and reach it through api")
        })
        .collect();
    problems.extend(
        allowed
            .iter()
            .filter(|(a, _)| !public.iter().any(|m| m == a))
            .map(|(a, _)| format!("`{a}` is no longer public: remove it from PUBLIC_MODULES")),
    );
    problems
}

/// Each `tidelake_core::x` path in `code` (comments left out) whose first segment is not `api`.
fn paths_around_the_facade(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        for (i, _) in line.match_indices("tidelake_core::") {
            let rest = &line[i + "tidelake_core::".len()..];
            let head: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '{')
                .collect();
            if head != "api" {
                out.push(line.trim().to_string());
            }
        }
    }
    out
}

#[test]
fn only_the_facade_and_listed_modules_are_public() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let problems = module_problems(&lib, PUBLIC_MODULES);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_binding_uses_the_core_through_its_facade() {
    let binding = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tidelake-python/src");
    let mut problems = Vec::new();
    for entry in fs::read_dir(&binding).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let code = fs::read_to_string(&path).unwrap();
            for p in paths_around_the_facade(&code) {
                problems.push(format!("{}: {p}", path.display()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the binding uses the core around tidelake_core::api:\n{}",
        problems.join("\n")
    );
}

/// Each line of `code` (comments left out) naming one of `names` as a whole word, with the name.
fn lines_naming(code: &str, names: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .collect();
        for (name, by) in names {
            if words.contains(name) {
                out.push(format!("{}: {name} (use {by})", line.trim()));
            }
        }
    }
    out
}

#[test]
fn the_facade_and_the_binding_leave_what_ops_assembles_to_ops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems: Vec<String> = lines_naming(
        &fs::read_to_string(root.join("src/api.rs")).unwrap(),
        ASSEMBLED_BY_OPS,
    )
    .into_iter()
    .map(|p| format!("src/api.rs: {p}"))
    .collect();
    for entry in fs::read_dir(root.join("../tidelake-python/src")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let code = fs::read_to_string(&path).unwrap();
            for p in lines_naming(&code, ASSEMBLED_BY_OPS) {
                problems.push(format!("{}: {p}", path.display()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "engine pieces named outside ops:\n{}",
        problems.join("\n")
    );
}

// The checks on small inputs.

#[test]
fn unlisted_and_stale_public_modules_are_reported() {
    let lib = "pub mod api;\npub mod scan;\npub(crate) mod write;\nmod tasks;\n";
    assert_eq!(
        module_problems(lib, &[("api", ""), ("write", "")]),
        vec![
            "lib.rs declares `pub mod scan`: make it pub(crate) and reach it through api",
            "`write` is no longer public: remove it from PUBLIC_MODULES",
        ]
    );
    assert_eq!(
        module_problems(lib, &[("api", ""), ("scan", "")]),
        Vec::<String>::new()
    );
}

#[test]
fn paths_around_the_facade_are_found_outside_comments() {
    let code = "use tidelake_core::api::{Error, Table};\n\
                use tidelake_core::scan::Split; // tidelake_core::x\n\
                //! see tidelake_core::commit\n\
                type R = tidelake_core::Result<()>;\n";
    assert_eq!(
        paths_around_the_facade(code),
        vec![
            "use tidelake_core::scan::Split;",
            "type R = tidelake_core::Result<()>;",
        ]
    );
}

#[test]
fn names_are_found_as_whole_words_outside_comments() {
    let code = "use tidelake_core::api::read::{ReadContext, X};\n\
                let c = MyReadContext::new(); // ReadContext\n";
    assert_eq!(
        lines_naming(code, &[("ReadContext", "ops::Read")]),
        vec!["use tidelake_core::api::read::{ReadContext, X};: ReadContext (use ops::Read)"]
    );
}
