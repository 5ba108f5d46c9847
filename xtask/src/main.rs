//! Project automation. `cargo xtask ci` runs exactly what CI runs:
//! formatting, clippy with `-D warnings`, the layering checks, the tests, and the docs.
//!
//! Kept dependency-free on purpose: it only spawns `cargo`. It is a binary that talks to a
//! terminal, so printing is its job.
#![allow(clippy::print_stderr, clippy::print_stdout)]

use std::process::{Command, ExitCode};

mod features;
mod measure;
mod source;
mod ties;

/// The pure crates: transcript algebra (core), what only extends it (the Anthropic
/// dialect) and what it uses on plain text (secret redaction). No async, I/O, HTTP or SQL in
/// their normal dependency trees, and no adapter.
const PURE: [&str; 3] = [
    "compaction-core",
    "compaction-anthropic",
    "compaction-redact",
];

/// Crates that must never appear in a pure crate's normal dependency tree.
const FORBIDDEN_IN_CORE: [&str; 6] = [
    "tokio",
    "sqlx",
    "reqwest",
    "hyper",
    "async-openai",
    "rig-core",
];

/// Framework integrations: they sit above the facade, and nothing of the library (core, the
/// adapters, the facade) depends on them or on the framework they integrate.
const INTEGRATIONS: [(&str, &str); 1] = [("hermes-compaction-rig", "rig-core")];

/// Adapter crates: each depends on core, never on another adapter.
const ADAPTERS: [&str; 4] = [
    "compaction-llm",
    "compaction-logs",
    "compaction-store",
    "compaction-telemetry",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("layering") => layering(),
        Some("features") => features::check(),
        Some("test") => test(),
        Some("measure") => measure::measure(&workspace_root()),
        _ => {
            eprintln!("usage: cargo xtask <ci|layering|features|test|measure>");
            eprintln!("  ci        fmt check, clippy -D warnings, layering, tests, docs");
            eprintln!("  layering  the dependency-direction checks alone");
            eprintln!("  features  what each feature set must and must not compile");
            eprintln!("  test      the tests alone");
            eprintln!("  measure   lines per crate, largest files, import cycles inside crates");
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
    let summary = ci_steps()?;
    summary.close();
    Ok(())
}

fn ci_steps() -> Result<TestSummary, String> {
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
    // The size limits of the public face (issue 32): the store trait's required methods, the
    // compressor's public methods, core's public items.
    measure::measure(&workspace_root())?;
    config_keys()?;
    features::check()?;
    let summary = run_tests()?;
    // Every benchmark once, in criterion's test mode (`cargo test` runs a criterion bench
    // binary without `--bench`, so each routine runs one iteration): a broken premise or a
    // panicking setup fails CI instead of rotting until someone runs `cargo bench`.
    step(
        "benches",
        &["test", "--workspace", "--all-features", "--benches", "-q"],
    )?;
    // The agent-loop example asserts what it shows (no request over the window, the store
    // holds the transcript): run it, not only build it.
    step(
        "example",
        &[
            "run",
            "-q",
            "-p",
            "hermes-compaction",
            "--all-features",
            "--example",
            "agent_loop",
        ],
    )?;
    // The resume example asserts the laws on every pass and that the interrupted turn finished.
    step(
        "example resume_turn",
        &[
            "run",
            "-q",
            "-p",
            "hermes-compaction",
            "--all-features",
            "--example",
            "resume_turn",
        ],
    )?;
    // The prepared-summary example checks that every pass used its candidate (short latencies,
    // a lenient wait target: the 5 s measurement is in docs/PERFORMANCE.md).
    step(
        "example prepared_summary",
        &[
            "run",
            "-q",
            "-p",
            "hermes-compaction",
            "--all-features",
            "--example",
            "prepared_summary",
            "--",
            "--latency-ms",
            "50",
            "--model-ms",
            "25",
            "--passes",
            "3",
            "--target-ms",
            "1000",
        ],
    )?;
    let mut doc = Command::new(cargo());
    doc.args(["doc", "--workspace", "--no-deps", "--all-features"])
        .env("RUSTDOCFLAGS", "-D warnings");
    run("doc", doc)?;
    Ok(summary)
}

fn test() -> Result<(), String> {
    let summary = run_tests()?;
    summary.close();
    Ok(())
}

/// Says plainly which groups of tests skipped themselves (each test also prints `skipped: …`
/// to its captured stderr), so a run without PostgreSQL or the shared fixtures is not mistaken
/// for full coverage. `.ci/run` sets `HERMES_REQUIRE_*`, which turns these skips into failures.
fn report_skipped_groups() {
    if std::env::var_os("HERMES_TEST_DATABASE_URL").is_none() {
        println!("xtask: skipped: PostgreSQL tests (HERMES_TEST_DATABASE_URL not set; SQLite ran)");
    }
    let shared = std::env::var_os("HERMES_SHARED_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared")
        })
        .join("fixtures/transcripts");
    if !shared.is_dir() {
        println!(
            "xtask: skipped: tests over the shared fixture transcripts (not found at {})",
            shared.display()
        );
    }
}

/// Totals over every `test result:` line of a `cargo test` run, with the skips the tests
/// recorded (`test_support::skip`, through `HERMES_SKIP_LOG`).
#[derive(Debug, Default)]
struct TestSummary {
    /// What libtest counted as passed, wholly skipped tests included.
    passed: u64,
    failed: u64,
    /// Tests that only said `skipped: …` (libtest counts them as passed).
    skipped: u64,
    /// Tests that ran without their PostgreSQL part (SQLite ran).
    partial: u64,
}

impl TestSummary {
    /// Prints the skipped groups and the closing line CI reads: the totals of every test
    /// binary and doctest run, a wholly skipped test counted as skipped, not passed.
    fn close(&self) {
        report_skipped_groups();
        if self.partial > 0 {
            println!(
                "xtask: {} passed tests ran without their PostgreSQL part",
                self.partial
            );
        }
        let passed = self.passed.saturating_sub(self.skipped);
        if self.skipped > 0 {
            println!(
                "xtask: {passed} passed, {} failed, {} skipped",
                self.failed, self.skipped
            );
        } else {
            println!("xtask: {passed} passed, {} failed", self.failed);
        }
    }

    /// Reads the skip log: one `whole|part<TAB>test` line per skip, a test counted once.
    fn read_skips(&mut self, log: &std::path::Path) {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let mut whole = std::collections::BTreeSet::new();
        let mut part = std::collections::BTreeSet::new();
        for line in text.lines() {
            match line.split_once('\t') {
                Some(("whole", test)) => {
                    whole.insert(test);
                }
                Some(("part", test)) => {
                    part.insert(test);
                }
                _ => {}
            }
        }
        self.skipped = whole.len() as u64;
        self.partial = part.difference(&whole).count() as u64;
    }
}

/// Runs the tests, echoing their output, and adds up what they report.
fn run_tests() -> Result<TestSummary, String> {
    use std::io::{BufRead, BufReader};
    let skip_log = workspace_root().join("target").join("xtask-skips.log");
    let _ = std::fs::create_dir_all(workspace_root().join("target"));
    std::fs::write(&skip_log, "").map_err(|e| format!("test: {}: {e}", skip_log.display()))?;
    let mut cmd = Command::new(cargo());
    cmd.args(["test", "--workspace", "--all-features"])
        .env("HERMES_SKIP_LOG", &skip_log)
        .stdout(std::process::Stdio::piped());
    eprintln!("xtask: running test: {cmd:?}");
    let _beat = Heartbeat::start("test");
    let mut child = cmd.spawn().map_err(|e| format!("test: {e}"))?;
    let mut summary = TestSummary::default();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            if let Some(rest) = line.strip_prefix("test result: ") {
                summary.passed += count(rest, " passed");
                summary.failed += count(rest, " failed");
            }
        }
    }
    let status = child.wait().map_err(|e| format!("test: {e}"))?;
    summary.read_skips(&skip_log);
    if status.success() && summary.failed == 0 {
        Ok(summary)
    } else {
        summary.close();
        Err(format!("test failed ({status})"))
    }
}

/// Prints `xtask: NAME still running (N s)` every 30 s until dropped, so a long quiet step
/// (a test binary compiling under `-q`, clippy on a cold cache) never looks hung.
struct Heartbeat {
    stop: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    const EVERY: std::time::Duration = std::time::Duration::from_secs(30);

    fn start(name: &str) -> Self {
        let stop = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let (flag, name) = (stop.clone(), name.to_owned());
        let thread = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let (lock, cvar) = &*flag;
            let mut done = lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            loop {
                let (guard, timeout) = cvar
                    .wait_timeout(done, Self::EVERY)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                done = guard;
                if *done {
                    return;
                }
                if timeout.timed_out() {
                    eprintln!(
                        "xtask: {name} still running ({} s)",
                        started.elapsed().as_secs()
                    );
                }
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        let (lock, cvar) = &*self.stop;
        *lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        cvar.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The number before `label` in a `test result:` line (`ok. 12 passed; 0 failed; ...`).
fn count(line: &str, label: &str) -> u64 {
    line.split(';')
        .find_map(|part| {
            let part = part
                .trim()
                .trim_start_matches("ok. ")
                .trim_start_matches("FAILED. ");
            part.strip_suffix(label.trim_start())
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

fn layering() -> Result<(), String> {
    // The modules of each crate import one another one way only (`cargo xtask measure` lists
    // the graph's strongly connected components; a text scan, so it costs no build).
    if let Some((krate, scc)) = measure::import_cycles(&workspace_root())?.first() {
        return Err(format!(
            "layering: import cycle in `{krate}`: {} (move the shared item to the module that owns it, or to a leaf module)",
            scc.join(" <-> ")
        ));
    }
    for pure in PURE {
        let deps = tree(pure)?;
        for bad in FORBIDDEN_IN_CORE {
            if tree_contains(&deps, bad) {
                return Err(format!(
                    "layering: {pure} depends on `{bad}` (a pure crate stays free of async, I/O, HTTP and SQL)"
                ));
            }
        }
        for adapter in ADAPTERS.iter().chain(&["hermes-compaction"]) {
            if tree_contains(&deps, adapter) {
                return Err(format!(
                    "layering: {pure} depends on `{adapter}` (a pure crate sits below the adapters)"
                ));
            }
        }
    }
    // Redaction knows strings, not messages: core depends on it, never the other way.
    if tree_contains(&tree("compaction-redact")?, "compaction-core") {
        return Err(
            "layering: compaction-redact depends on compaction-core (core uses redaction; redaction knows strings only)".into(),
        );
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
    for library in ADAPTERS.iter().chain(&PURE).chain(&["hermes-compaction"]) {
        let deps = tree(library)?;
        for (integration, framework) in INTEGRATIONS {
            for bad in [integration, framework] {
                if tree_contains(&deps, bad) {
                    return Err(format!(
                        "layering: `{library}` depends on `{bad}` (framework integrations sit above the facade)"
                    ));
                }
            }
        }
    }
    for (integration, framework) in INTEGRATIONS {
        let deps = tree(integration)?;
        for needed in ["hermes-compaction", framework] {
            if !tree_contains(&deps, needed) {
                return Err(format!(
                    "layering: `{integration}` does not depend on `{needed}` (an integration goes through the facade)"
                ));
            }
        }
    }
    // Emitting telemetry must not compile the log reader (feature `report`) or its gzip support.
    let out = Command::new(cargo())
        .args([
            "tree",
            "-p",
            "compaction-telemetry",
            "--no-default-features",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .map_err(|e| format!("cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo tree -p compaction-telemetry --no-default-features failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    if tree_contains(&String::from_utf8_lossy(&out.stdout), "flate2") {
        return Err(
            "layering: compaction-telemetry without features depends on `flate2` (the log reader belongs behind `report`)".into(),
        );
    }
    eprintln!("xtask: layering ok");
    Ok(())
}

/// Every key in `config/default.toml` is read into the facade's `Config`, and every `Config`
/// field is documented there. The check is a test of the root package (`tests/config_keys.rs`):
/// it lets serde decide, deserializing the file with `deny_unknown_fields` and comparing the
/// key paths of the file with those of `Config::default()` serialized, which a text scan of
/// the sources could only approximate (renames, nested tables, fields named like others).
/// Run here as its own step so a drift is reported as such, not as one failure among many.
fn config_keys() -> Result<(), String> {
    step(
        "config keys",
        &[
            "test",
            "-q",
            "-p",
            "hermes-compaction-suite",
            "--test",
            "tests",
            "--",
            "config_keys::",
        ],
    )
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
    let _beat = Heartbeat::start(name);
    let status = cmd.status().map_err(|e| format!("{name}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{name} failed ({status})"))
    }
}

/// The workspace root (xtask sits one level below it).
fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}
