//! `cargo xtask measure`: lines per crate, public items per crate, the largest files, and the
//! import cycles between the top-level modules of each crate.
//!
//! A public item is a declaration line of the non-test code under `src/` (everything before a
//! file's first `#[cfg(test)]` or `#[cfg(all(test, …))]`, in a file that is not a test module)
//! that starts with `pub` followed by `fn`, `struct`, `enum`, `trait`, `type`, `const`,
//! `static`, `mod`, `use` (or `async fn`, `unsafe fn`): `pub(crate)` and other restricted
//! visibilities are not public, a `pub use` line counts once whatever it re-exports, and fields
//! and variants are not items.
//!
//! A module is a file under `src/` (`src/a.rs` and `src/a/b.rs` both count as module `a`;
//! `lib.rs` and `main.rs` are the crate root, not a module). Module `a` imports module `b` when
//! the non-test code of `a` (everything before its first test attribute) names a path
//! `crate::b…`, or `crate::X` where the root re-exports `X` from `b` (`pub use b::{X, …}`).
//! A test module's file (`#[cfg(test)] mod tests;` in `a.rs` names `a/tests.rs`) and every file
//! below it are test code throughout. Comment lines are skipped. Cycles are the strongly
//! connected components of more than one module (Tarjan). Text-based on purpose: no parser
//! dependency, and `use` paths are regular enough that the count is reproducible.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
    for (name, dir) in &crates {
        let mut n = 0;
        let tests = test_module_files(&dir.join("src"))?;
        for f in rust_files(&dir.join("src")) {
            if tests.contains(&f) {
                continue;
            }
            let text = std::fs::read_to_string(&f)
                .map_err(|e| format!("measure: {}: {e}", f.display()))?;
            n += public_items(&text);
        }
        total_pub += n;
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
    if required > MAX_REQUIRED_STORE_METHODS {
        return Err(format!(
            "measure: TranscriptStore has {required} required methods, more than \
             {MAX_REQUIRED_STORE_METHODS}: provide the new one on top of the others"
        ));
    }
    Ok(())
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
/// connected component)`, in crate order. `cargo xtask layering` fails when there is one.
pub fn import_cycles(root: &Path) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out = Vec::new();
    for (name, dir) in crate_dirs(root)? {
        let graph = module_graph(&dir.join("src"))?;
        for scc in sccs(&graph).into_iter().filter(|c| c.len() > 1) {
            out.push((name.clone(), scc));
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

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The public declarations of `text` (see the module docs), before its first `#[cfg(test)]`.
fn public_items(text: &str) -> usize {
    const KINDS: [&str; 11] = [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "const ",
        "static ",
        "mod ",
        "use ",
        "async fn ",
        "unsafe fn ",
    ];
    text.lines()
        .take_while(|l| !is_test_cfg(l))
        .filter_map(|l| l.trim_start().strip_prefix("pub "))
        .filter(|rest| KINDS.iter().any(|k| rest.starts_with(k)))
        .count()
}

fn line_count(f: &Path) -> Result<usize, String> {
    std::fs::read_to_string(f)
        .map(|t| t.lines().count())
        .map_err(|e| format!("measure: {}: {e}", f.display()))
}

/// Top-level module name -> the modules its non-test code names through `crate::`.
fn module_graph(src: &Path) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let mut roots = Vec::new();
    let tests = test_module_files(src)?;
    for f in rust_files(src) {
        if tests.contains(&f) {
            continue;
        }
        let rel = f.strip_prefix(src).unwrap_or(&f);
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        match first.as_str() {
            "lib.rs" | "main.rs" => roots.push(f.clone()),
            _ if rel.components().count() == 1 => {
                let name = first.trim_end_matches(".rs").to_owned();
                modules.entry(name).or_default().push(f.clone());
            }
            // A file in a subdirectory (`a/b.rs`, `a/mod.rs`) belongs to module `a`; binaries
            // under `src/bin` are their own roots.
            "bin" => {}
            _ => modules.entry(first).or_default().push(f.clone()),
        }
    }
    // Names the crate root re-exports, and the module each comes from.
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    for r in &roots {
        let text = std::fs::read_to_string(r).map_err(|e| format!("measure: {e}"))?;
        for stmt in code(&text).split(';') {
            let stmt = stmt.trim();
            let Some(path) = stmt.rsplit_once("pub use ").map(|(_, p)| p) else {
                continue;
            };
            let path = path
                .trim_start_matches("crate::")
                .trim_start_matches("self::");
            let Some((module, names)) = path.split_once("::") else {
                continue;
            };
            if !modules.contains_key(module) {
                continue;
            }
            for name in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                if !name.is_empty() && name != "self" {
                    reexports.insert(name.to_owned(), module.to_owned());
                }
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (name, files) in &modules {
        let mut deps = BTreeSet::new();
        for f in files {
            let text = std::fs::read_to_string(f).map_err(|e| format!("measure: {e}"))?;
            let text = code(&text);
            for (i, _) in text.match_indices("crate::") {
                // `$crate::` in a macro is the crate root too; `foo_crate::` is another crate.
                let before = text[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                for target in crate_path_targets(&text[i + "crate::".len()..]) {
                    let module = if modules.contains_key(&target) {
                        Some(target)
                    } else {
                        reexports.get(&target).cloned()
                    };
                    if let Some(m) = module.filter(|m| m != name) {
                        deps.insert(m);
                    }
                }
            }
        }
        graph.insert(name.clone(), deps);
    }
    Ok(graph)
}

/// The files under `src` that are test modules: the file of a `mod NAME;` declared under a
/// test attribute ([`is_test_cfg`], other attributes and comments between), and every file
/// below it.
fn test_module_files(src: &Path) -> Result<BTreeSet<PathBuf>, String> {
    let files = rust_files(src);
    let mut test_modules = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).map_err(|e| format!("measure: {e}"))?;
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, _) in lines.iter().enumerate().filter(|(_, l)| is_test_cfg(l)) {
            let Some(decl) = lines[i + 1..]
                .iter()
                .find(|l| !l.starts_with("#[") && !l.starts_with("//"))
            else {
                continue;
            };
            let decl = decl.strip_prefix("pub ").unwrap_or(decl);
            let Some(name) = decl
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(';'))
            else {
                continue;
            };
            // A root (`lib.rs`, `main.rs`) or `mod.rs` holds its children beside it; `a.rs`
            // holds them in `a/`.
            let parent = f.parent().unwrap_or(src);
            let own = match f.file_name().and_then(|n| n.to_str()) {
                Some("lib.rs" | "main.rs" | "mod.rs") => parent.to_path_buf(),
                _ => parent.join(f.file_stem().unwrap_or_default()),
            };
            test_modules.push((
                own.join(format!("{}.rs", name.trim())),
                own.join(name.trim()),
            ));
        }
    }
    Ok(files
        .into_iter()
        .filter(|f| {
            test_modules
                .iter()
                .any(|(file, dir)| f == file || f.starts_with(dir))
        })
        .collect())
}

/// The first segment of a path after `crate::`, or each first segment of a `{a, b::c}` group.
fn crate_path_targets(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(group) = rest.strip_prefix('{') {
        let end = group.find('}').unwrap_or(group.len());
        let mut depth = 0;
        let mut out = Vec::new();
        let mut start = 0;
        for (i, c) in group[..end].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(ident(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(ident(&group[start..end]));
        out.retain(|s| !s.is_empty());
        out
    } else {
        vec![ident(rest)]
    }
}

/// The lines before the first test attribute ([`is_test_cfg`]), without comment lines.
fn code(text: &str) -> String {
    text.lines()
        .take_while(|l| !is_test_cfg(l))
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `line` opens test-only code: `#[cfg(test)]`, or `#[cfg(all(test, …))]` (a test
/// module that also needs a feature).
fn is_test_cfg(line: &str) -> bool {
    let l = line.trim_start();
    l.starts_with("#[cfg(test)]") || l.starts_with("#[cfg(all(test,")
}

/// Tarjan's strongly connected components, each sorted, in a stable order.
fn sccs(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !graph.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn counts_public_declarations_only() {
        let text = "pub mod a;\npub(crate) fn hidden() {}\n/// pub fn in_a_doc() {}\n\
                    pub struct S {\n    pub field: u8,\n}\nimpl S {\n    pub fn m(&self) {}\n    \
                    pub async fn n(&self) {}\n}\npub use b::{X, Y};\nfn private() {}\n\
                    #[cfg(test)]\npub fn test_only() {}\n";
        assert_eq!(public_items(text), 5);
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

    #[test]
    fn paths_and_groups() {
        assert_eq!(crate_path_targets("report::InputStats;"), vec!["report"]);
        assert_eq!(
            crate_path_targets("{error::Result, scan::{self, Record}};"),
            vec!["error", "scan"]
        );
    }
}
