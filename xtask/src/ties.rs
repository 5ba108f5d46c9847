//! The module ties of one crate, file by file: which module's code names which other module,
//! through a `crate::`, `super::` or `self::` path, through a name a module re-exports, or
//! through a method call on `self` whose method another module's inherent `impl` defines.
//!
//! A module is a file under `src/`: `src/a.rs` and `src/a/mod.rs` are module `a`, `src/a/b.rs`
//! is `a::b`, `lib.rs` / `main.rs` the root. Test modules (see `source::test_module_files`) and
//! everything after a file's first test attribute are left out, as are comment lines.
//!
//! Cycles are looked for among siblings: every tie from a module under `p::x` to one under
//! `p::y` (`x != y`) is a tie `x -> y` in the graph of `p`'s children. A parent and its own
//! children may name each other (a `mod.rs` declares its children, a child reads its parent's
//! types), which is nesting, not a cycle; two siblings that need each other are one module
//! split in two, or share something that belongs in a third.
//!
//! Method ties: `self.name(` in module `m`, where `name` is a `fn` of an inherent `impl` block
//! (`impl T {`, not `impl Trait for T`) in exactly one other module of the crate, is a tie from
//! `m` to that module: the call depends on it as surely as an import would, and no `use` line
//! shows it. A name defined in two modules is left out (the text cannot tell which is meant).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path below the crate root (`[]` is the root).
pub type ModPath = Vec<String>;

/// Module -> the modules its code ties to (itself left out).
pub type FileGraph = BTreeMap<ModPath, BTreeSet<ModPath>>;

/// The tie graph of the crate whose sources are `src` (test code left out).
pub fn file_graph(src: &Path) -> Result<FileGraph, String> {
    let tests = crate::source::test_module_files(src)?;
    let mut texts: BTreeMap<ModPath, String> = BTreeMap::new();
    for f in crate::source::rust_files(src) {
        if tests.contains(&f) {
            continue;
        }
        let Some(path) = module_path(src, &f) else {
            continue;
        };
        let text =
            std::fs::read_to_string(&f).map_err(|e| format!("ties: {}: {e}", f.display()))?;
        let code = crate::source::code(&text);
        texts
            .entry(path)
            .and_modify(|t| {
                t.push('\n');
                t.push_str(&code);
            })
            .or_insert(code);
    }
    let modules: BTreeSet<ModPath> = texts.keys().cloned().collect();
    let reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>> = texts
        .iter()
        .map(|(m, t)| (m.clone(), reexports_of(m, t, &modules)))
        .collect();
    let methods = method_owners(&texts);
    let mut graph = FileGraph::new();
    for (m, text) in &texts {
        let mut deps = BTreeSet::new();
        for path in paths_in(m, text) {
            if let Some(target) = resolve(&path, &modules, &reexports) {
                deps.insert(target);
            }
        }
        for name in self_calls(text) {
            if let Some(owner) = methods.get(&name) {
                deps.insert(owner.clone());
            }
        }
        deps.remove(m);
        graph.insert(m.clone(), deps);
    }
    Ok(graph)
}

/// The graphs of siblings: parent module -> (child name -> child names it ties to).
pub fn sibling_graphs(graph: &FileGraph) -> BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> {
    let mut out: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for m in graph.keys() {
        if let Some((last, parent)) = m.split_last() {
            out.entry(parent.to_vec())
                .or_default()
                .entry(last.clone())
                .or_default();
        }
    }
    for (from, targets) in graph {
        for to in targets {
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // an ancestor and its descendant: nesting
            }
            let parent = from[..common].to_vec();
            out.entry(parent)
                .or_default()
                .entry(from[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    out
}

/// `src/a/b.rs` -> `[a, b]`, `src/a/mod.rs` -> `[a]`, `src/lib.rs` -> `[]`; binaries under
/// `src/bin` are other crates' roots (`None`).
fn module_path(src: &Path, f: &Path) -> Option<ModPath> {
    let rel = f.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.trim_end_matches(".rs");
    if !(parts.is_empty() && matches!(stem, "lib" | "main") || stem == "mod") {
        parts.push(stem.to_owned());
    }
    Some(parts)
}

/// The absolute paths named in `text` of module `m` through `crate::`, `super::` and `self::`
/// (a `{...}` group gives one path per item).
fn paths_in(m: &ModPath, text: &str) -> Vec<ModPath> {
    let mut out = Vec::new();
    for anchor in ["crate::", "super::", "self::"] {
        for (i, _) in text.match_indices(anchor) {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                // `foo_crate::`, `a::self::` / `super::super::` (counted at their start),
                // `$crate::` (a macro's crate root, left to the root)
                if !(before == Some('$') && anchor == "crate::") {
                    continue;
                }
            }
            let mut rest = &text[i..];
            let base: ModPath = match anchor {
                "crate::" => {
                    rest = &rest["crate::".len()..];
                    Vec::new()
                }
                "self::" => {
                    rest = &rest["self::".len()..];
                    m.clone()
                }
                _ => {
                    let mut b = m.clone();
                    while let Some(r) = rest.strip_prefix("super::") {
                        b.pop();
                        rest = r;
                    }
                    b
                }
            };
            for tail in group_paths(rest, 0) {
                let mut p = base.clone();
                p.extend(tail);
                out.push(p);
            }
        }
    }
    out
}

/// The relative paths at the start of `rest`: `a::b::C` -> `[[a, b, C]]`,
/// `a::{b, c::D}` -> `[[a, b], [a, c, D]]`, `{self, x}` -> `[[], [x]]`.
fn group_paths(rest: &str, depth: usize) -> Vec<ModPath> {
    let mut segs = Vec::new();
    let mut s = rest;
    loop {
        let s_trim = s.trim_start();
        if let Some(group) = s_trim.strip_prefix('{') {
            if depth > 8 {
                return vec![segs];
            }
            let end = matching_brace(group).unwrap_or(group.len());
            let mut out = Vec::new();
            for item in split_top(&group[..end]) {
                for tail in group_paths(item, depth + 1) {
                    let mut p = segs.clone();
                    p.extend(tail);
                    out.push(p);
                }
            }
            return out;
        }
        let ident: String = s_trim
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            return vec![segs];
        }
        let after = &s_trim[ident.len()..];
        if ident != "self" {
            segs.push(ident);
        }
        match after.strip_prefix("::") {
            Some(next) => s = next,
            None => return vec![segs],
        }
    }
}

/// The index of the `}` that closes a group whose `{` was just consumed.
fn matching_brace(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The items of a group's body, split at its top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0usize, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.retain(|p| !p.trim().is_empty());
    out
}

/// The module an absolute path lands in: its longest prefix that is a module, or, when the next
/// segment is a name that module re-exports, the module the name comes from.
fn resolve(
    path: &ModPath,
    modules: &BTreeSet<ModPath>,
    reexports: &BTreeMap<ModPath, BTreeMap<String, ModPath>>,
) -> Option<ModPath> {
    let mut at = (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))?;
    // Follow re-exports a few steps (a root that re-exports a module's re-export).
    for _ in 0..4 {
        let Some(next) = path.get(at.len()) else {
            break;
        };
        match reexports.get(&at).and_then(|r| r.get(next)) {
            Some(from) if from != &at => at = from.clone(),
            _ => break,
        }
    }
    Some(at)
}

/// Names module `m` re-exports (`pub use` / `pub(crate) use` / `pub(super) use`) -> the module
/// each comes from.
fn reexports_of(m: &ModPath, text: &str, modules: &BTreeSet<ModPath>) -> BTreeMap<String, ModPath> {
    let mut out = BTreeMap::new();
    for stmt in text.split(';') {
        let stmt = stmt.trim();
        let Some(idx) = ["pub use ", "pub(crate) use ", "pub(super) use "]
            .iter()
            .find_map(|k| stmt.rfind(k).map(|i| i + k.len()))
        else {
            continue;
        };
        let body = &stmt[idx..];
        let (base, rest): (ModPath, &str) = if let Some(r) = body.strip_prefix("crate::") {
            (Vec::new(), r)
        } else if let Some(r) = body.strip_prefix("self::") {
            (m.clone(), r)
        } else if body.starts_with("super::") {
            let mut b = m.clone();
            let mut r = body;
            while let Some(x) = r.strip_prefix("super::") {
                b.pop();
                r = x;
            }
            (b, r)
        } else {
            // `pub use child::X`: relative to the module itself.
            (m.clone(), body)
        };
        for tail in group_paths(rest, 0) {
            let Some((name, module_part)) = tail.split_last() else {
                continue;
            };
            let mut full = base.clone();
            full.extend(module_part.iter().cloned());
            if let Some(from) = (0..=full.len())
                .rev()
                .map(|n| full[..n].to_vec())
                .find(|p| modules.contains(p))
                && &from != m
            {
                out.insert(name.clone(), from);
            }
        }
    }
    out
}

/// Method name -> the one module whose inherent `impl` blocks define it (names defined in more
/// than one module are left out).
fn method_owners(texts: &BTreeMap<ModPath, String>) -> BTreeMap<String, ModPath> {
    let mut owners: BTreeMap<String, BTreeSet<ModPath>> = BTreeMap::new();
    for (m, text) in texts {
        for name in inherent_methods(text) {
            owners.entry(name).or_default().insert(m.clone());
        }
    }
    owners
        .into_iter()
        .filter_map(|(name, ms)| {
            (ms.len() == 1).then(|| (name, ms.into_iter().next().expect("one")))
        })
        .collect()
}

/// The `fn` names directly inside the inherent `impl` blocks of `text`.
fn inherent_methods(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        let is_impl = t.starts_with("impl ") || t.starts_with("impl<");
        if !is_impl {
            continue;
        }
        // The header may span lines (a where-clause): read up to its `{`.
        let mut header = t.to_owned();
        while !header.contains('{') {
            let Some(next) = lines.next() else {
                break;
            };
            header.push(' ');
            header.push_str(next.trim());
        }
        let inherent = !header.contains(" for ");
        let mut depth = header.matches('{').count() as i64 - header.matches('}').count() as i64;
        while depth > 0 {
            let Some(body) = lines.next() else {
                break;
            };
            let b = body.trim_start();
            if inherent
                && depth == 1
                && let Some(name) = fn_name(b)
            {
                out.push(name);
            }
            depth += body.matches('{').count() as i64 - body.matches('}').count() as i64;
        }
    }
    out
}

/// The name declared by a `fn` line (`pub(crate) async fn name<...>(`), if it is one.
fn fn_name(line: &str) -> Option<String> {
    let i = line.find("fn ")?;
    let prefix = &line[..i];
    let words_ok = prefix.split_whitespace().all(|w| {
        w.starts_with("pub") || matches!(w, "async" | "const" | "unsafe" | "extern" | "\"C\"")
    });
    if !words_ok {
        return None;
    }
    let name: String = line[i + 3..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The names of the methods called as `self.name(` or `self.name::<` in `text`.
fn self_calls(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("self.") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
            continue;
        }
        let rest = &text[i + "self.".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = &rest[name.len()..];
        if !name.is_empty() && (after.starts_with('(') || after.starts_with("::<")) {
            out.insert(name);
        }
    }
    out
}

/// Tarjan's strongly connected components, each sorted, in a stable order.
pub(crate) fn sccs(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
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

    /// The tie graph of a crate made of `files` (path under `src/`, text).
    fn crate_with(tag: &str, files: &[(&str, &str)]) -> FileGraph {
        let dir = std::env::temp_dir().join(format!("xtask-ties-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let src = dir.join("src");
        for (name, text) in files {
            let f = src.join(name);
            std::fs::create_dir_all(f.parent().expect("parent")).expect("dir");
            std::fs::write(&f, text).expect("write");
        }
        let g = file_graph(&src).expect("graph");
        std::fs::remove_dir_all(&dir).expect("clean");
        g
    }

    fn p(s: &str) -> ModPath {
        s.split("::")
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn a_super_path_between_siblings_is_a_cycle() {
        let g = crate_with(
            "super",
            &[
                ("lib.rs", "mod micro;\n"),
                (
                    "micro/mod.rs",
                    "mod absorb;\nmod assemble;\npub struct State;\n",
                ),
                (
                    "micro/absorb.rs",
                    "use super::assemble::join;\npub fn take() {}\n",
                ),
                (
                    "micro/assemble.rs",
                    "use super::{State, absorb::take};\npub fn join() {}\n",
                ),
            ],
        );
        assert!(g[&p("micro::absorb")].contains(&p("micro::assemble")));
        assert!(g[&p("micro::assemble")].contains(&p("micro::absorb")));
        assert!(g[&p("micro::assemble")].contains(&p("micro")));
        let siblings = sibling_graphs(&g);
        let micro = &siblings[&p("micro")];
        let cycles: Vec<_> = sccs(micro).into_iter().filter(|c| c.len() > 1).collect();
        assert_eq!(
            cycles,
            vec![vec!["absorb".to_owned(), "assemble".to_owned()]]
        );
        // The parent naming its children and a child naming its parent are nesting.
        assert!(siblings[&Vec::new()]["micro"].is_empty());
    }

    #[test]
    fn a_method_defined_elsewhere_and_called_on_self_is_a_tie() {
        let g = crate_with(
            "method",
            &[
                ("lib.rs", "mod compressor;\nmod undo;\npub struct C;\n"),
                (
                    "compressor/mod.rs",
                    "mod pass;\nimpl crate::C {\n    pub fn run(&self) {}\n}\n",
                ),
                (
                    "compressor/pass.rs",
                    "impl crate::C {\n    pub(crate) fn pass(&mut self) {\n        self.remember_pass(1);\n    }\n}\n",
                ),
                (
                    "undo.rs",
                    "impl crate::C {\n    pub(crate) fn remember_pass(&mut self, n: u8) {\n        let _ = n;\n    }\n    pub fn undo(&mut self) {\n        self.run();\n    }\n}\nimpl std::fmt::Display for crate::C {\n    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) }\n}\n",
                ),
            ],
        );
        assert!(g[&p("compressor::pass")].contains(&p("undo")));
        assert!(g[&p("undo")].contains(&p("compressor")));
        let siblings = sibling_graphs(&g);
        let root = &siblings[&Vec::new()];
        assert!(root["compressor"].contains("undo"));
        assert!(root["undo"].contains("compressor"));
    }

    #[test]
    fn reexports_lead_to_the_defining_module_and_comments_tie_nothing() {
        let g = crate_with(
            "reexport",
            &[
                ("lib.rs", "mod a;\nmod b;\npub use b::inner::Y;\n"),
                ("a.rs", "use crate::Y;\n// crate::b::Z\n"),
                ("b/mod.rs", "pub mod inner;\npub(crate) use inner::Z;\n"),
                ("b/inner.rs", "pub struct Y;\npub struct Z;\n"),
            ],
        );
        assert_eq!(g[&p("a")], BTreeSet::from([p("b::inner")]));
        assert!(g[&p("b::inner")].is_empty());
    }

    #[test]
    fn groups_nest() {
        assert_eq!(
            group_paths("{error::Result, scan::{self, Record}};", 0),
            vec![p("error::Result"), p("scan"), p("scan::Record")]
        );
        assert_eq!(group_paths("a::b::C;", 0), vec![p("a::b::C")]);
    }
}
