//! The feature-set check: each cargo feature of the facade (and of compaction-llm,
//! compaction-store, compaction-telemetry and the rig integration) adds what it names and
//! nothing else; the extension points (compaction-store's `TranscriptStore` without a backend,
//! emit-only telemetry) build without the heavy crates. For each feature set, `cargo tree -e
//! normal` must hold the crates the set names and none of the crates it leaves out, and
//! `cargo check --all-targets` must pass (a feature set whose tests or examples do not build
//! is one a user cannot test against). Like the layering check, it reads the resolved graph,
//! so a default feature switched on through a dependency is caught.

use std::process::Command;

/// One feature set of one package, and what its normal dependency tree must and must not hold.
struct FeatureSet {
    package: &'static str,
    /// `--features` (always with `--no-default-features`), or `None` for the defaults.
    features: Option<&'static str>,
    present: &'static [&'static str],
    absent: &'static [&'static str],
}

const SETS: &[FeatureSet] = &[
    FeatureSet {
        package: "compaction-llm",
        features: None,
        present: &[],
        absent: &["reqwest", "hyper", "rustls", "async-openai", "sqlx"],
    },
    FeatureSet {
        package: "compaction-llm",
        features: Some("openai"),
        present: &["reqwest", "rustls"],
        absent: &["async-openai", "sqlx"],
    },
    FeatureSet {
        package: "compaction-llm",
        features: Some("async-openai"),
        present: &["async-openai"],
        absent: &["sqlx"],
    },
    // The store's extension point: `TranscriptStore` and its value types, no backend, so a
    // store of one's own compiles neither sqlx nor tokio.
    FeatureSet {
        package: "compaction-store",
        features: Some(""),
        present: &["compaction-core"],
        absent: &[
            "sqlx",
            "sqlx-core",
            "tokio",
            "libsqlite3-sys",
            "futures-util",
        ],
    },
    FeatureSet {
        package: "compaction-store",
        features: None,
        present: &["sqlx-sqlite", "tokio"],
        absent: &["sqlx-postgres", "aws-lc-sys", "rustls"],
    },
    FeatureSet {
        package: "compaction-store",
        features: Some("postgres"),
        present: &["sqlx-postgres", "tokio"],
        absent: &["sqlx-sqlite", "libsqlite3-sys", "aws-lc-sys"],
    },
    // Emitting telemetry links no subscriber and no log reader.
    FeatureSet {
        package: "compaction-telemetry",
        features: Some(""),
        present: &["tracing"],
        absent: &["tracing-subscriber", "flate2"],
    },
    FeatureSet {
        package: "compaction-telemetry",
        features: Some("subscriber"),
        present: &["tracing-subscriber"],
        absent: &["flate2"],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: Some(""),
        present: &["compaction-core"],
        absent: &[
            "compaction-llm",
            "compaction-store",
            "compaction-telemetry",
            "figment",
            "tokio",
            "reqwest",
            "hyper",
            "sqlx",
        ],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: Some("llm"),
        present: &["compaction-llm"],
        absent: &[
            "reqwest",
            "hyper",
            "rustls",
            "async-openai",
            "sqlx",
            "figment",
        ],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: Some("openai"),
        present: &["compaction-llm", "reqwest"],
        absent: &["async-openai", "sqlx"],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: Some("async-openai"),
        present: &["compaction-llm", "async-openai"],
        absent: &["sqlx"],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: Some("store"),
        present: &["compaction-store", "sqlx-sqlite"],
        absent: &[
            "sqlx-postgres",
            "aws-lc-sys",
            "reqwest",
            "hyper",
            "compaction-llm",
        ],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: Some("postgres"),
        present: &["compaction-store", "sqlx-postgres"],
        absent: &["reqwest", "hyper", "compaction-llm", "aws-lc-sys"],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: Some("tls"),
        present: &["compaction-store", "sqlx-postgres", "rustls"],
        absent: &["reqwest", "hyper", "compaction-llm"],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: Some("telemetry"),
        present: &["compaction-telemetry"],
        absent: &[
            "reqwest",
            "hyper",
            "sqlx",
            "figment",
            "compaction-llm",
            "tracing-subscriber",
        ],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: Some("config"),
        present: &["figment"],
        // figment's `env` provider drags in pear and yansi, whose blanket `Paint` impl would
        // bury every public type's methods on docs.rs; the facade reads the environment itself.
        absent: &["yansi", "pear", "reqwest", "sqlx", "compaction-llm"],
    },
    FeatureSet {
        package: "hermes-compaction",
        features: None,
        present: &[
            "compaction-llm",
            "compaction-store",
            "compaction-telemetry",
            "figment",
        ],
        absent: &[
            "reqwest",
            "hyper",
            "rustls",
            "async-openai",
            "sqlx-postgres",
            "aws-lc-sys",
        ],
    },
    // The rig integration: rig-core without its default features (no HTTP client, no derive
    // macros), the store with SQLite; PostgreSQL only with its feature.
    FeatureSet {
        package: "hermes-compaction-rig",
        features: None,
        present: &[
            "rig-core",
            "hermes-compaction",
            "compaction-store",
            "sqlx-sqlite",
        ],
        absent: &[
            "reqwest",
            "hyper",
            "rustls",
            "rig-derive",
            "rig-reqwest",
            "sqlx-postgres",
            "async-openai",
            "compaction-telemetry",
            "figment",
        ],
    },
    FeatureSet {
        package: "hermes-compaction-rig",
        features: Some("postgres"),
        present: &["rig-core", "sqlx-postgres"],
        absent: &["reqwest", "hyper", "rustls", "rig-derive", "aws-lc-sys"],
    },
];

/// Runs every feature set; prints each set's crate count. Each set must also compile with
/// all its targets (`cargo check --all-targets`: the library, its tests, examples and
/// benches), so a feature set a user can pick is one whose tests build.
pub fn check() -> Result<(), String> {
    let mut failures = Vec::new();
    for set in SETS {
        let crates = tree(set)?;
        let label = label(set);
        if let Err(why) = compiles(set) {
            failures.push(format!(
                "{label}: does not compile with --all-targets: {why}"
            ));
        }
        for name in set.present {
            if !crates.iter().any(|c| c == name) {
                failures.push(format!(
                    "{label}: `{name}` missing (the feature should bring it)"
                ));
            }
        }
        for name in set.absent {
            if crates.iter().any(|c| c == name) {
                failures.push(format!(
                    "{label}: `{name}` present (the feature set should leave it out)"
                ));
            }
        }
        eprintln!("xtask: features: {label}: {} crates", crates.len());
    }
    if failures.is_empty() {
        eprintln!("xtask: features ok");
        Ok(())
    } else {
        Err(format!("features:\n  {}", failures.join("\n  ")))
    }
}

/// `cargo check --all-targets` of the set.
fn compiles(set: &FeatureSet) -> Result<(), String> {
    let mut cmd = Command::new(super::cargo());
    cmd.args(["check", "-q", "-p", set.package, "--all-targets"]);
    cmd.args(feature_args(set));
    let out = cmd.output().map_err(|e| format!("cargo check: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    // The first error line says enough to find it; the whole output is one command away.
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(stderr
        .lines()
        .find(|l| l.starts_with("error"))
        .unwrap_or("cargo check failed")
        .to_owned())
}

/// The cargo flags that select the set's features (none for the defaults).
fn feature_args(set: &FeatureSet) -> Vec<&'static str> {
    match set.features {
        None => vec![],
        Some("") => vec!["--no-default-features"],
        Some(f) => vec!["--no-default-features", "--features", f],
    }
}

fn label(set: &FeatureSet) -> String {
    match set.features {
        None => format!("{} (default features)", set.package),
        Some("") => format!("{} --no-default-features", set.package),
        Some(f) => format!("{} --no-default-features --features {f}", set.package),
    }
}

/// The distinct crate names of the set's normal dependency tree (the package included).
fn tree(set: &FeatureSet) -> Result<Vec<String>, String> {
    let mut cmd = Command::new(super::cargo());
    cmd.args([
        "tree",
        "-p",
        set.package,
        "-e",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]);
    cmd.args(feature_args(set));
    let out = cmd.output().map_err(|e| format!("cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo tree for {} failed: {}",
            label(set),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}
