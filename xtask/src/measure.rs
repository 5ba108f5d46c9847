//! `cargo xtask measure`: lines per crate, public items per crate, the largest files, the
//! import cycles among the modules of each crate, and the size limits of the public face.
//!
//! A public item is a declaration line of the non-test code under `src/` (everything before a
//! file's test module, the first `#[cfg(test)]` or `#[cfg(all(test, …))]` on a `mod`, in a file
//! that is not a test module)
//! that starts with `pub` followed by `fn`, `struct`, `enum`, `trait`, `type`, `const`,
//! `static`, `mod` (or `async fn`, `unsafe fn`), and each name a `pub use` re-exports (`pub use
//! a::{B, c::{D, E as F}};` is three items, across lines); a glob `pub use a::*` fails the
//! measure, as its names cannot be counted from the text. `pub(crate)` and other restricted
//! visibilities are not public, and fields and variants are not items.
//!
//! Each item counts once. In a file whose module is not reachable by path from the crate root
//! (declared `mod x;`, not `pub mod x;`, itself or an ancestor), a top-level declaration is
//! exported only through a `pub use` elsewhere, which is where it counts; its methods (the
//! indented `pub fn` lines of its `impl` blocks) count where they are declared. The same holds
//! inside an inline module that is not public (`mod exact { pub struct Tiktoken … }` beside
//! `pub use exact::Tiktoken;`): its own items (the lines at its first indentation) count at
//! their re-export, the methods of their `impl` blocks where declared.
//!
//! The cycles come from [`crate::ties`]: a graph of the crate's files, tied by `crate::`,
//! `super::` and `self::` paths, re-exported names and method calls on `self`; a cycle is a
//! strongly connected component (Tarjan) of more than one sibling module, at any level.
//! Text-based on purpose: no parser dependency, and `use` paths are regular enough that the
//! count is reproducible.

use std::path::{Path, PathBuf};

use crate::source::{code, is_test_cfg, rust_files, test_module_files};
use crate::ties::sccs;

/// Prints the three measurements for the workspace at `root`.
pub fn measure(root: &Path) -> Result<(), String> {
    let crates = crate_dirs(root)?;
    println!("lines per crate (src / tests+benches+examples):");
    let mut all_files: Vec<(usize, PathBuf)> = Vec::new();
    let (mut total_src, mut total_rest) = (0, 0);
    for (name, dir) in &crates {
        let mut src = 0;
        let mut rest = 0;
        for sub in ["src", "tests", "benches", "examples"] {
            for f in rust_files(&dir.join(sub)) {
                let n = line_count(&f)?;
                if sub == "src" {
                    src += n;
                } else {
                    rest += n;
                }
                all_files.push((n, f.strip_prefix(root).unwrap_or(&f).to_path_buf()));
            }
        }
        total_src += src;
        total_rest += rest;
        println!("  {name:<28} {src:>6} / {rest:>6}");
    }
    println!("  {:<28} {total_src:>6} / {total_rest:>6}", "total");
    println!("public items per crate (pub declarations in non-test src):");
    let mut total_pub = 0;
    let mut core_pub = None;
    for (name, dir) in &crates {
        let mut n = 0;
        let tests = test_module_files(&dir.join("src"))?;
        let reachable = reachable_files(&dir.join("src"))?;
        for f in rust_files(&dir.join("src")) {
            if tests.contains(&f) {
                continue;
            }
            let text = std::fs::read_to_string(&f)
                .map_err(|e| format!("measure: {}: {e}", f.display()))?;
            n += public_items(&text, reachable.contains(&f))
                .map_err(|e| format!("measure: {}: {e}", f.display()))?;
        }
        total_pub += n;
        if name == "compaction-core" {
            core_pub = Some(n);
        }
        println!("  {name:<28} {n:>6}");
    }
    println!("  {:<28} {total_pub:>6}", "total");
    all_files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    println!("largest files:");
    for (n, f) in all_files.iter().take(10) {
        println!("  {n:>6} {}", f.display());
    }
    println!("import cycles between modules (strongly connected components):");
    let cycles = import_cycles(root)?;
    for (name, scc) in &cycles {
        println!("  {name}: {}", scc.join(" <-> "));
    }
    println!("  {} cycle(s)", cycles.len());
    let lib = root.join("crates/compaction-store/src/lib.rs");
    let text =
        std::fs::read_to_string(&lib).map_err(|e| format!("measure: {}: {e}", lib.display()))?;
    let required = required_methods(&text, "TranscriptStore").ok_or_else(|| {
        format!(
            "measure: no `pub trait TranscriptStore` in {}",
            lib.display()
        )
    })?;
    println!("required TranscriptStore methods: {required} (at most {MAX_REQUIRED_STORE_METHODS})");
    let facade = root.join("crates/hermes-compaction/src");
    let mut compressor = 0;
    for f in rust_files(&facade) {
        let text =
            std::fs::read_to_string(&f).map_err(|e| format!("measure: {}: {e}", f.display()))?;
        compressor += inherent_public_methods(&text, "Compressor");
    }
    println!("public Compressor methods: {compressor} (at most {MAX_COMPRESSOR_METHODS})");
    let core_pub = core_pub.ok_or("measure: no compaction-core crate")?;
    println!("compaction-core public items: {core_pub} (at most {MAX_CORE_PUBLIC_ITEMS})");
    let mut over = Vec::new();
    if required > MAX_REQUIRED_STORE_METHODS {
        over.push(format!(
            "TranscriptStore has {required} required methods, more than \
             {MAX_REQUIRED_STORE_METHODS}: provide the new one on top of the others"
        ));
    }
    if compressor > MAX_COMPRESSOR_METHODS {
        over.push(format!(
            "Compressor has {compressor} public methods, more than {MAX_COMPRESSOR_METHODS}: \
             a new mode is a value of an existing hook, a new fact a field of its status"
        ));
    }
    if core_pub > MAX_CORE_PUBLIC_ITEMS {
        over.push(format!(
            "compaction-core exports {core_pub} public items, more than \
             {MAX_CORE_PUBLIC_ITEMS}: keep helpers crate-private, economics in compaction-sim"
        ));
    }
    if over.is_empty() {
        Ok(())
    } else {
        Err(format!("measure: {}", over.join("; ")))
    }
}

/// The public methods the compressor may have, at most (issue 32).
const MAX_COMPRESSOR_METHODS: usize = 15;

/// The public items compaction-core may export, at most: a ratchet at today's count (issue
/// 32 asks for 220, not reached yet; lower it as items go, never raise it). 342 when the count
/// became honest (each re-exported name counted, a test-only item skipped alone), 254 after the
/// cuts of issue 32, 229 once each item counts once (a type of a private module counted at
/// its re-export only, not also at its declaration), 228 when that held for an inline private
/// module too (`Tiktoken`), and 222 without the redundant setters and helpers (`set_meta`,
/// `set_pinned`, `with_options`, `pin_written`, `classify_text`, `is_user_text`), 220 with one
/// partition (`partition_calibrated` folded into `partition`) and one way to find a names
/// index (`has_name_indexes` gone: `without_name_indexes` borrows when there is none).
const MAX_CORE_PUBLIC_ITEMS: usize = 220;

/// The `pub fn` / `pub async fn` lines directly inside `impl {ty} {` blocks of `text` (its
/// non-test code), whatever path names the type (`impl crate::Compressor {`).
fn inherent_public_methods(text: &str, ty: &str) -> usize {
    let code = code(text);
    let mut count = 0;
    let mut depth = 0i64;
    let mut inside: Option<i64> = None;
    for line in code.lines() {
        let t = line.trim_start();
        if inside.is_none()
            && (t.starts_with("impl ") || t.starts_with("impl<"))
            && !t.contains(" for ")
            && t.trim_end()
                .trim_end_matches('{')
                .trim_end()
                .rsplit([' ', ':', '>'])
                .next()
                == Some(ty)
        {
            inside = Some(depth);
        } else if let Some(at) = inside
            && depth == at + 1
            && (t.starts_with("pub fn ") || t.starts_with("pub async fn "))
        {
            count += 1;
        }
        depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
        if inside.is_some_and(|at| depth <= at) {
            inside = None;
        }
    }
    count
}

/// What a store of one's own must implement, at most (issue 32).
const MAX_REQUIRED_STORE_METHODS: usize = 8;

/// The required methods of `pub trait {name}` in `text`: the `fn` declarations directly in the
/// trait body (comment lines skipped) that end in `;` rather than a body.
fn required_methods(text: &str, name: &str) -> Option<usize> {
    let code = code(text);
    let start = code.find(&format!("pub trait {name}"))?;
    let body = start + code[start..].find('{')? + 1;
    let (mut depth, mut count, mut in_fn) = (1usize, 0, false);
    let bytes = code.as_bytes();
    let mut i = body;
    while i < bytes.len() && depth > 0 {
        match bytes[i] {
            b'{' => {
                if depth == 1 {
                    in_fn = false;
                }
                depth += 1;
            }
            b'}' => depth -= 1,
            b';' if depth == 1 && in_fn => {
                count += 1;
                in_fn = false;
            }
            b'f' if depth == 1
                && code[i..].starts_with("fn ")
                && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) =>
            {
                in_fn = true;
            }
            _ => {}
        }
        i += 1;
    }
    Some(count)
}

/// The import cycles of every workspace crate: `(package name, the modules of one strongly
/// connected component)`, in crate order. The modules of a component are siblings (the
/// children of one module, the crate root's included), named by their path from the crate
/// root. `cargo xtask layering` fails when there is one.
pub fn import_cycles(root: &Path) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out = Vec::new();
    for (name, dir) in crate_dirs(root)? {
        let graph = crate::ties::file_graph(&dir.join("src"))?;
        for (parent, siblings) in crate::ties::sibling_graphs(&graph) {
            for scc in sccs(&siblings).into_iter().filter(|c| c.len() > 1) {
                let named = scc
                    .into_iter()
                    .map(|m| {
                        parent
                            .iter()
                            .cloned()
                            .chain(std::iter::once(m))
                            .collect::<Vec<_>>()
                            .join("::")
                    })
                    .collect();
                out.push((name.clone(), named));
            }
        }
    }
    Ok(out)
}

/// `(package name, directory)` of every workspace crate: `crates/*`, `xtask` and the root.
fn crate_dirs(root: &Path) -> Result<Vec<(String, PathBuf)>, String> {
    let mut out = vec![(package_name(root)?, root.to_path_buf())];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map_err(|e| format!("measure: crates/: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.push(root.join("xtask"));
    dirs.sort();
    for d in dirs {
        out.push((package_name(&d)?, d));
    }
    Ok(out)
}

fn package_name(dir: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(dir.join("Cargo.toml"))
        .map_err(|e| format!("measure: {}: {e}", dir.display()))?;
    Ok(text
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "name").then(|| v.trim().trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| dir.display().to_string()))
}

/// The files under `src` (a crate's `src/`) whose module is reachable by path from the crate
/// root: `lib.rs` (or `main.rs`) and every file declared `pub mod x;` by a reachable file.
fn reachable_files(src: &Path) -> Result<std::collections::HashSet<PathBuf>, String> {
    let mut seen = std::collections::HashSet::new();
    let mut todo: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .filter(|f| f.is_file())
        .collect();
    while let Some(file) = todo.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("measure: {}: {e}", file.display()))?;
        // A child of lib.rs, main.rs or x/mod.rs sits beside it; a child of x.rs under x/.
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("lib.rs" | "main.rs" | "mod.rs") => file.parent().unwrap_or(src).to_path_buf(),
            _ => file.with_extension(""),
        };
        for line in code(&text).lines() {
            let Some(name) = line
                .trim_start()
                .strip_prefix("pub mod ")
                .and_then(|r| r.trim_end().strip_suffix(';'))
            else {
                continue;
            };
            let name = name.trim();
            for child in [
                dir.join(format!("{name}.rs")),
                dir.join(name).join("mod.rs"),
            ] {
                if child.is_file() {
                    todo.push(child);
                }
            }
        }
    }
    Ok(seen)
}

/// The public declarations of `text` (see the module docs), before its test module (the first
/// `#[cfg(test)]` that opens a `mod`; a test-only item elsewhere is skipped, and hides nothing
/// after it): each name of a `pub use` counts. In a file not `reachable` by path, only the
/// indented declarations (methods) count. `Err` names a glob re-export.
fn public_items(text: &str, reachable: bool) -> Result<usize, String> {
    const KINDS: [&str; 10] = [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "const ",
        "static ",
        "mod ",
        "async fn ",
        "unsafe fn ",
    ];
    let lines: Vec<&str> = text.lines().collect();
    let mut count = 0;
    let mut i = 0;
    // The inline modules (`mod x {`, not `pub mod x {`) the line is in: the indentation of
    // their `mod` line and of their items (their first non-blank line), innermost last.
    let mut inline: Vec<(usize, Option<usize>)> = Vec::new();
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let indent = line.len() - line.trim_start().len();
        if !line.trim().is_empty() {
            while inline.last().is_some_and(|&(at, _)| {
                indent < at || (indent == at && line.trim_start().starts_with('}'))
            }) {
                inline.pop();
            }
            if let Some((_, items @ None)) = inline.last_mut() {
                *items = Some(indent);
            }
        }
        if is_test_cfg(line) {
            let item = lines[i..]
                .iter()
                .map(|l| l.trim_start())
                .find(|l| !l.starts_with("#[") && !l.starts_with("//"))
                .unwrap_or_default();
            let item = item.strip_prefix("pub ").unwrap_or(item);
            let item = item.strip_prefix("pub(crate) ").unwrap_or(item);
            if item.starts_with("mod ") {
                break;
            }
            // The test-only item itself is not counted.
            while i < lines.len() {
                let l = lines[i].trim_start();
                i += 1;
                if !l.starts_with("#[") && !l.starts_with("//") {
                    break;
                }
            }
            continue;
        }
        if is_private_inline_module(line) {
            inline.push((indent, None));
            continue;
        }
        let Some(rest) = line.trim_start().strip_prefix("pub ") else {
            continue;
        };
        let own_item = match inline.last() {
            Some(&(_, items)) => items == Some(indent),
            None => !line.starts_with(char::is_whitespace),
        };
        if own_item && (!reachable || !inline.is_empty()) {
            // A top-level item of a module not reachable by path (its file's, or an inline
            // private module's): exported only through a re-export, which counts it.
            continue;
        }
        if let Some(tree) = rest.strip_prefix("use ") {
            // The statement runs to its `;`, maybe lines below.
            let mut stmt = tree.to_owned();
            while !stmt.contains(';') && i < lines.len() {
                stmt.push(' ');
                stmt.push_str(lines[i].trim());
                i += 1;
            }
            let stmt = stmt.split(';').next().unwrap_or_default();
            count += use_tree_names(stmt)
                .map_err(|()| format!("glob re-export `pub use {};`", stmt.trim()))?;
        } else if KINDS.iter().any(|k| rest.starts_with(k)) {
            count += 1;
        }
    }
    Ok(count)
}

/// Whether `line` opens an inline module that is not public (`mod x {`, `pub(crate) mod x {`):
/// its items are not reachable by path from outside the crate.
fn is_private_inline_module(line: &str) -> bool {
    let mut t = line.trim_start();
    if let Some(rest) = t.strip_prefix("pub(") {
        t = rest.split_once(')').map_or("", |(_, r)| r).trim_start();
    }
    t.strip_prefix("mod ")
        .is_some_and(|r| r.trim_end().ends_with('{'))
}

/// The names a use tree (`a::b::{C, d::{E, F as G}, self}`) brings in; `Err` for a glob.
fn use_tree_names(tree: &str) -> Result<usize, ()> {
    let tree = tree.trim();
    if tree.is_empty() {
        return Ok(0);
    }
    let Some(open) = tree.find('{') else {
        return if tree.ends_with('*') { Err(()) } else { Ok(1) };
    };
    let inner = tree[open + 1..]
        .trim_end()
        .strip_suffix('}')
        .unwrap_or(&tree[open + 1..]);
    // Split at the commas outside nested braces.
    let (mut depth, mut from, mut total) = (0usize, 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                total += use_tree_names(&inner[from..i])?;
                from = i + 1;
            }
            _ => {}
        }
    }
    Ok(total + use_tree_names(&inner[from..])?)
}

fn line_count(f: &Path) -> Result<usize, String> {
    std::fs::read_to_string(f)
        .map(|t| t.lines().count())
        .map_err(|e| format!("measure: {}: {e}", f.display()))
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;

    /// Top-level module name -> the top-level modules its non-test code ties to (see
    /// [`crate::ties`]: `crate::`, `super::` and `self::` paths, re-exports, method calls on `self`).
    fn module_graph(src: &Path) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
        let graph = crate::ties::file_graph(src)?;
        Ok(crate::ties::sibling_graphs(&graph)
            .remove(&Vec::new())
            .unwrap_or_default())
    }

    #[test]
    fn counts_required_trait_methods_only() {
        let text = "pub trait T: Send {\n    /// fn in_a_doc();\n    fn a(&self) -> u8;\n    \
                    fn b<'a>(&'a self, x: &'a str)\n    -> Box<dyn Fn() + 'a>;\n    \
                    fn c(&self) -> u8 {\n        let f = |x: u8| { x };\n        f(1)\n    }\n}\n\
                    pub trait U {\n    fn d(&self);\n}\n";
        assert_eq!(required_methods(text, "T"), Some(2));
        assert_eq!(required_methods(text, "U"), Some(1));
        assert_eq!(required_methods(text, "V"), None);
    }

    #[test]
    fn counts_the_public_methods_of_one_type() {
        let text = "pub struct Compressor;\nimpl Compressor {\n    pub fn a(&self) {}\n    \
                    pub(crate) fn hidden(&self) {}\n    pub async fn b(&self) {\n        \
                    let f = || { 1 };\n    }\n    fn private(&self) {}\n}\n\
                    impl crate::Compressor {\n    pub fn c(&self) {}\n}\n\
                    impl Default for Compressor {\n    fn default() -> Self { Compressor }\n}\n\
                    impl CompressorBuilder {\n    pub fn d(self) {}\n}\n\
                    #[cfg(test)]\nimpl Compressor {\n    pub fn test_only(&self) {}\n}\n";
        assert_eq!(inherent_public_methods(text, "Compressor"), 3);
        assert_eq!(inherent_public_methods(text, "CompressorBuilder"), 1);
    }

    #[test]
    fn counts_public_declarations_only() {
        let text = "pub mod a;\npub(crate) fn hidden() {}\n/// pub fn in_a_doc() {}\n\
                    pub struct S {\n    pub field: u8,\n}\nimpl S {\n    pub fn m(&self) {}\n    \
                    pub async fn n(&self) {}\n}\npub use b::{X, Y};\nfn private() {}\n\
                    #[cfg(test)]\npub fn test_only() {}\n";
        assert_eq!(public_items(text, true), Ok(6));
        // Unreachable by path: only the method lines count.
        assert_eq!(public_items(text, false), Ok(2));
    }

    #[test]
    fn counts_an_item_of_a_private_inline_module_at_its_re_export() {
        let text = "pub use exact::T;\n\n#[cfg(feature = \"x\")]\nmod exact {\n    \
                    use super::U;\n\n    /// Doc.\n    pub struct T {\n        pub f: u8,\n    \
                    }\n\n    impl T {\n        pub fn new() -> T {\n            T { f: 0 }\n        \
                    }\n    }\n\n    pub(crate) fn hidden() {}\n}\n\npub fn after() {}\n\
                    pub mod open {\n    pub fn seen() {}\n}\n";
        // `T` at its re-export, `new`, `after`, `open` and `seen`: not `T` a second time.
        assert_eq!(public_items(text, true), Ok(5));
        assert!(is_private_inline_module("pub(crate) mod m {"));
        assert!(!is_private_inline_module("pub mod m {"));
        assert!(!is_private_inline_module("mod m;"));
    }

    #[test]
    fn counts_each_name_a_re_export_brings() {
        let text = "pub use a::B;\npub use self::{\n    c::d,\n    e::{F, G as H},\n    \
                    i::{j::{K, L}, self},\n};\npub(crate) use m::N;\npub use o::{P,};\n";
        assert_eq!(public_items(text, true), Ok(8));
        let test_only = "#[cfg(test)]\npub fn reference() {}\npub fn after() {}\n\
                         #[cfg(test)]\n#[allow(unused)]\nmod tests {\n    pub fn helper() {}\n}\n";
        assert_eq!(public_items(test_only, true), Ok(1));
        let glob = "pub use a::B;\npub use c::{d::*, E};\n";
        assert_eq!(
            public_items(glob, true),
            Err("glob re-export `pub use c::{d::*, E};`".to_owned())
        );
    }

    #[test]
    fn finds_a_cycle_and_ignores_a_chain() {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut edge = |a: &str, b: &str| {
            g.entry(a.into()).or_default().insert(b.into());
            g.entry(b.into()).or_default();
        };
        edge("a", "b");
        edge("b", "c");
        edge("c", "a");
        edge("c", "d");
        edge("e", "d");
        let cycles: Vec<_> = sccs(&g).into_iter().filter(|c| c.len() > 1).collect();
        assert_eq!(cycles, vec![vec!["a", "b", "c"]]);
    }

    #[test]
    fn a_test_module_and_a_comment_import_nothing() {
        let dir = std::env::temp_dir().join(format!("xtask-graph-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("c")).unwrap();
        std::fs::write(
            src.join("lib.rs"),
            "mod a;\nmod b;\nmod c;\npub use c::X;\n",
        )
        .unwrap();
        std::fs::write(src.join("a.rs"), "use crate::b::Y;\n// crate::c\n").unwrap();
        std::fs::write(
            src.join("b.rs"),
            "pub struct Y;\n#[cfg(all(test, feature = \"f\"))]\nmod t { use crate::a; }\n",
        )
        .unwrap();
        std::fs::write(
            src.join("c/mod.rs"),
            "pub struct X;\nfn f() -> crate::b::Y { todo!() }\n",
        )
        .unwrap();
        let graph = module_graph(&src).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(graph["a"], BTreeSet::from(["b".to_owned()]));
        assert!(graph["b"].is_empty());
        assert_eq!(graph["c"], BTreeSet::from(["b".to_owned()]));
        assert!(sccs(&graph).iter().all(|c| c.len() == 1));
    }

    #[test]
    fn a_test_module_file_imports_nothing() {
        let dir = std::env::temp_dir().join(format!("xtask-test-files-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("a/tests")).unwrap();
        std::fs::create_dir_all(src.join("b")).unwrap();
        std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
        std::fs::write(
            src.join("a.rs"),
            "mod part;\npub fn f() {}\n#[cfg(all(test, feature = \"f\"))]\n#[allow(unused)]\nmod tests;\n",
        )
        .unwrap();
        std::fs::write(src.join("a/part.rs"), "use crate::b::Y;\n").unwrap();
        std::fs::write(src.join("a/tests.rs"), "mod more;\npub fn helper() {}\n").unwrap();
        std::fs::write(src.join("a/tests/more.rs"), "use crate::b::Z;\n").unwrap();
        std::fs::write(
            src.join("b/mod.rs"),
            "pub struct Y;\npub struct Z;\n#[cfg(test)]\nmod tests;\n",
        )
        .unwrap();
        std::fs::write(src.join("b/tests.rs"), "use crate::a::f;\n").unwrap();
        let tests = test_module_files(&src).unwrap();
        let graph = module_graph(&src).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let expected = BTreeSet::from([
            src.join("a/tests.rs"),
            src.join("a/tests/more.rs"),
            src.join("b/tests.rs"),
        ]);
        assert_eq!(tests, expected);
        assert_eq!(graph["a"], BTreeSet::from(["b".to_owned()]));
        assert!(
            graph["b"].is_empty(),
            "b's tests import a, b's code does not"
        );
    }
}
