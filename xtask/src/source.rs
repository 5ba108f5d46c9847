//! Reading a crate's sources as text: its `.rs` files, which of them are test modules, and the
//! code of a file without its tests and comment lines. Shared by `measure` and `ties`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively, sorted.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
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

/// The files under `src` that are test modules: the file of a `mod NAME;` declared under a
/// test attribute ([`is_test_cfg`], other attributes and comments between), and every file
/// below it.
pub(crate) fn test_module_files(src: &Path) -> Result<BTreeSet<PathBuf>, String> {
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

/// The lines before the first test attribute ([`is_test_cfg`]), without comment lines.
pub(crate) fn code(text: &str) -> String {
    text.lines()
        .take_while(|l| !is_test_cfg(l))
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `line` opens test-only code: `#[cfg(test)]`, or `#[cfg(all(test, …))]` (a test
/// module that also needs a feature).
pub(crate) fn is_test_cfg(line: &str) -> bool {
    let l = line.trim_start();
    l.starts_with("#[cfg(test)]") || l.starts_with("#[cfg(all(test,")
}
