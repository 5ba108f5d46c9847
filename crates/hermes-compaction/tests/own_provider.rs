//! The recipe "Add a summarizer provider" (docs/ARCHITECTURE.md), followed once: a provider
//! defined here (its adapter and one row) joins the provider table with `Provider::register`;
//! the configuration may then name it, `summarizer_from_config` builds it, and a compressor
//! built from that configuration summarizes with it, with no other change.

use std::sync::Arc;

use compaction_llm::{Summarizer, SummaryFuture, SummaryKind, SummaryRequest, SummaryResponse};
use hermes_compaction::{Config, ConfigError, ConfigLoader, Provider, summarizer_from_config};

/// The adapter: a "model" that answers with a fixed, well-formed summary.
struct Acme {
    model: String,
}

impl Summarizer for Acme {
    fn name(&self) -> &str {
        &self.model
    }

    fn summarize<'a>(&'a self, _req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(async move {
            Ok(SummaryResponse::new(
                "## Goal\n- keep the build green",
                self.model.clone(),
            ))
        })
    }
}

/// How the row builds it from `auxiliary.compression` (its model name, else `model.name`).
fn build_acme(config: &Config) -> Result<Arc<dyn Summarizer>, ConfigError> {
    let aux = &config.auxiliary.compression;
    let model = if aux.model.is_empty() {
        config.model.name.clone()
    } else {
        aux.model.clone()
    };
    if model.is_empty() {
        return Err(ConfigError::Invalid {
            key: "auxiliary.compression.model",
            value: "\"\"".into(),
            allowed: "a model name for the acme provider",
        });
    }
    Ok(Arc::new(Acme { model }))
}

/// The one row.
const ACME: Provider = Provider::new("acme", build_acme);

const TOML: &str = "[auxiliary.compression]\nprovider = \"acme\"\nmodel = \"acme-small\"\n";

#[test]
fn a_provider_defined_outside_the_crate_joins_the_table() {
    // Before it joins, the configuration may not name it.
    let err = ConfigLoader::new()
        .toml("[auxiliary.compression]\nprovider = \"acme-unregistered\"\n")
        .load()
        .unwrap_err()
        .to_string();
    assert!(err.contains("auxiliary.compression.provider"), "{err}");

    ACME.register().expect("a new name joins");
    ACME.register()
        .expect("registering it again changes nothing");
    assert_eq!(Provider::OPENAI.register(), Err("openai"));
    assert!(Provider::all().contains(&ACME));
    assert_eq!(Provider::from_name("acme"), Some(ACME));

    // The configuration names it; the facade builds it by the table.
    let (config, _) = ConfigLoader::new()
        .toml(TOML)
        .load()
        .expect("acme is a provider");
    let s = summarizer_from_config(&config).unwrap();
    assert_eq!(s.name(), "acme-small");
    // Its own settings are checked by its row, naming the key.
    let (mut bare, _) = ConfigLoader::new().toml(TOML).load().unwrap();
    bare.auxiliary.compression.model.clear();
    let err = summarizer_from_config(&bare).err().unwrap().to_string();
    assert!(err.contains("auxiliary.compression.model"), "{err}");

    // It answers requests as any summarizer does.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let req = SummaryRequest::new(SummaryKind::BatchFirst, "[user] fix it", 400, "2026-01-02");
    let out = rt.block_on(s.summarize(&req)).unwrap();
    assert_eq!(out.model, "acme-small");
    assert!(!out.extractive);

    // And a compressor built from that configuration takes it.
    let c = hermes_compaction::Compressor::builder(config)
        .summarizer(s)
        .build()
        .unwrap();
    assert_eq!(c.status().summarizer.name(), "acme-small");
}
