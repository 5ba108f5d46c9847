//! Project automation. `cargo xtask ci` runs exactly what CI runs:
//! formatting, clippy with `-D warnings`, the layering checks, the tests, and the docs.
//!
//! Kept dependency-free on purpose: it only spawns `cargo`. It is a binary that talks to a
//! terminal, so printing is its job.
#![allow(clippy::print_stderr, clippy::print_stdout)]

use std::process::{Command, ExitCode};

/// Crates that must never appear in compaction-core's normal dependency tree.
const FORBIDDEN_IN_CORE: [&str; 5] = ["tokio", "sqlx", "reqwest", "hyper", "async-openai"];

/// Adapter crates: each depends on core, never on another adapter.
const ADAPTERS: [&str; 3] = ["compaction-llm", "compaction-store", "compaction-telemetry"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("layering") => layering(),
        Some("test") => test(),
        _ => {
            eprintln!("usage: cargo xtask <ci|layering|test>");
            eprintln!("  ci        fmt check, clippy -D warnings, layering, tests, docs");
            eprintln!("  layering  the dependency-direction checks alone");
            eprintln!("  test      the tests alone");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("xtask: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn ci() -> Result<(), String> {
    step("fmt", &["fmt", "--all", "--", "--check"])?;
    step(
        "clippy",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    layering()?;
    test()?;
    let mut doc = Command::new(cargo());
    doc.args(["doc", "--workspace", "--no-deps", "--all-features"])
        .env("RUSTDOCFLAGS", "-D warnings");
    run("doc", doc)
}

fn test() -> Result<(), String> {
    step("test", &["test", "--workspace", "--all-features"])
}

fn layering() -> Result<(), String> {
    let core = tree("compaction-core")?;
    for bad in FORBIDDEN_IN_CORE {
        if tree_contains(&core, bad) {
            return Err(format!(
                "layering: compaction-core depends on `{bad}` (core must stay free of async, I/O, HTTP and SQL)"
            ));
        }
    }
    for adapter in ADAPTERS {
        let deps = tree(adapter)?;
        for other in ADAPTERS.iter().filter(|o| **o != adapter) {
            if tree_contains(&deps, other) {
                return Err(format!(
                    "layering: `{adapter}` depends on `{other}` (adapters meet only in the facade)"
                ));
            }
        }
    }
    eprintln!("xtask: layering ok");
    Ok(())
}

fn tree(package: &str) -> Result<String, String> {
    let out = Command::new(cargo())
        .args([
            "tree",
            "-p",
            package,
            "-e",
            "normal",
            "--all-features",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .map_err(|e| format!("cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo tree -p {package} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn tree_contains(tree: &str, name: &str) -> bool {
    tree.lines()
        .any(|l| l.split_whitespace().next() == Some(name))
}

fn step(name: &str, args: &[&str]) -> Result<(), String> {
    let mut cmd = Command::new(cargo());
    cmd.args(args);
    run(name, cmd)
}

fn run(name: &str, mut cmd: Command) -> Result<(), String> {
    eprintln!("xtask: running {name}: {cmd:?}");
    let status = cmd.status().map_err(|e| format!("{name}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{name} failed ({status})"))
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}
