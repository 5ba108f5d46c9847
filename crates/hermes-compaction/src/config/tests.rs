use std::path::Path;

use super::validate::MIN_CONTEXT_LENGTH_ALLOWED;
use super::*;

#[test]
fn shipped_default_file_matches_the_code_defaults() {
    let text = include_str!("../../../../config/default.toml");
    let from_file = ConfigLoader::new()
        .toml(text)
        .load()
        .expect("default.toml loads")
        .0;
    assert_eq!(from_file, Config::default());
}

#[test]
fn invalid_values_name_key_value_and_range() {
    let err = ConfigLoader::new()
        .toml("[compression]\nthreshold = 1.5\n")
        .load()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "configuration: `compression.threshold` = 1.5 is invalid: allowed 0.05 to 0.95"
    );
    let err = ConfigLoader::new()
        .toml("[compression]\nmax_attempts = 0\n")
        .load()
        .unwrap_err();
    assert!(
        err.to_string().contains("compression.max_attempts"),
        "{err}"
    );
    let err = ConfigLoader::new()
        .toml("[compression]\nthreshhold = 0.5\n")
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("threshhold"), "{err}");
}

/// Issue 21, item 15: `compression.threshold_tokens` caps the trigger whatever the window
/// (spec section 4, "Trigger"), 0 leaves it alone, and a cap below 1024 is refused.
#[test]
fn the_absolute_threshold_cap_bounds_every_window() {
    for window in [8_000u64, 64_000, 128_000, 200_000, 1_000_000, 2_000_000] {
        let text = format!("[model]\ncontext_length = {window}\n");
        let free = ConfigLoader::new()
            .toml(&text)
            .load()
            .unwrap()
            .0
            .window()
            .threshold_tokens();
        let capped = ConfigLoader::new()
            .toml(&format!("{text}[compression]\nthreshold_tokens = 50000\n"))
            .load()
            .unwrap()
            .0
            .window()
            .threshold_tokens();
        assert_eq!(capped, free.min(50_000), "window {window}");
    }
    for bad in [1u64, 1_023] {
        let err = ConfigLoader::new()
            .toml(&format!("[compression]\nthreshold_tokens = {bad}\n"))
            .load()
            .unwrap_err();
        assert!(
            err.to_string().contains("compression.threshold_tokens"),
            "{err}"
        );
    }
    assert!(
        ConfigLoader::new()
            .toml("[compression]\nthreshold_tokens = 1024\n")
            .load()
            .is_ok()
    );
}

/// Issue 21, item 16: `compression.min_tail_user_messages` reaches the core region policy
/// and is range-checked.
/// `micro_compact_min_age_answers` is read from a file: 8 by default, 0 folds any age; a
/// negative count is refused naming the key (core's configuration takes it on:
/// `tests/batch.rs`, `core_defaults_are_the_facade_defaults`).
#[test]
fn the_micro_age_floor_is_read() {
    let age = |toml: &str| {
        let cfg = ConfigLoader::new().toml(toml).load().unwrap().0;
        cfg.compression.micro_compact_min_age_answers
    };
    assert_eq!(age(""), 8);
    assert_eq!(age("[compression]\nmicro_compact_min_age_answers = 0\n"), 0);
    assert_eq!(age("[compression]\nmicro_compact_min_age_answers = 3\n"), 3);
    let err = ConfigLoader::new()
        .toml("[compression]\nmicro_compact_min_age_answers = -1\n")
        .load()
        .unwrap_err();
    assert!(
        err.to_string().contains("micro_compact_min_age_answers"),
        "{err}"
    );
}

#[test]
fn min_tail_user_messages_is_passed_on_and_checked() {
    let cfg = ConfigLoader::new()
        .toml("[compression]\nmin_tail_user_messages = 3\n")
        .load()
        .unwrap()
        .0;
    assert_eq!(cfg.regions().min_tail_user_messages, 3);
    assert_eq!(Config::default().regions().min_tail_user_messages, 0);
    let err = ConfigLoader::new()
        .toml("[compression]\nmin_tail_user_messages = 5000\n")
        .load()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("compression.min_tail_user_messages"),
        "{err}"
    );
}

#[test]
#[allow(clippy::result_large_err)]
fn environment_overrides_file() {
    figment::Jail::expect_with(|jail| {
        jail.create_file(
            "c.toml",
            "[compression]\nthreshold = 0.6\nmicro_compact = true\n",
        )?;
        jail.set_env("HERMES_COMPACTION__COMPRESSION__THRESHOLD", "0.7");
        let cfg = ConfigLoader::new()
            .file(Path::new("c.toml"))
            .env()
            .load()
            .expect("loads")
            .0;
        assert_eq!(cfg.compression.threshold, 0.7);
        assert!(cfg.compression.micro_compact);
        jail.set_env("HERMES_COMPACTION__COMPRESSION__THRESHOLD", "2");
        let err = ConfigLoader::new()
            .file(Path::new("c.toml"))
            .env()
            .load()
            .unwrap_err();
        assert!(err.to_string().contains("compression.threshold"));
        Ok(())
    });
}

#[test]
fn cache_profiles_resolve_by_name_model_or_custom_table() {
    let cfg = Config::default();
    assert_eq!(cfg.cache_profile(), None, "auto without a model name");
    let cfg = ConfigLoader::new()
        .toml("[model]\nname = \"claude-sonnet-4-5\"\n")
        .load()
        .unwrap()
        .0;
    assert_eq!(cfg.cache_profile().unwrap().name, "anthropic");
    let cfg = ConfigLoader::new()
        .toml("[model]\nname = \"claude-sonnet-4-5\"\n[compression]\ncache_profile = \"none\"\n")
        .load()
        .unwrap()
        .0;
    assert_eq!(cfg.cache_profile(), None);
    let cfg = ConfigLoader::new()
        .toml("[compression]\ncache_profile = \"openai\"\n")
        .load()
        .unwrap()
        .0;
    assert_eq!(cfg.cache_profile(), CacheProfile::named("openai"));
    let cfg = ConfigLoader::new()
        .toml(
            "[compression]\ncache_profile = \"custom\"\n[compression.cache_custom]\n\
             cached_input_price_ratio = 0.2\ncache_ttl_secs = 600\ninput_price_per_mtok = 1.0\n\
             cached_input_price_per_mtok = 0.2\n",
        )
        .load()
        .unwrap()
        .0;
    let p = cfg.cache_profile().unwrap();
    assert_eq!((p.name.as_str(), p.cache_ttl_secs), ("custom", 600));
    let err = ConfigLoader::new()
        .toml("[compression]\ncache_profile = \"azure\"\n")
        .load()
        .unwrap_err();
    assert!(
        err.to_string().contains("compression.cache_profile"),
        "{err}"
    );
    let err = ConfigLoader::new().toml(
            "[compression.cache_custom]\ninput_price_per_mtok = 1.0\ncached_input_price_per_mtok = 0.7\n",
        ).load()
        .unwrap_err();
    assert!(
        err.to_string().contains("cached_input_price_per_mtok"),
        "{err}"
    );
}

#[test]
fn trim_config_follows_the_insert_trim_keys() {
    let cfg = ConfigLoader::new()
        .toml("[compression]\ninsert_trim_tokens = 8000\ninsert_trim_head_chars = 100\n")
        .load()
        .unwrap()
        .0;
    let t = cfg.trim();
    assert_eq!(
        (t.max_tokens, t.head_chars, t.tail_chars),
        (8_000, 100, 2_000)
    );
    assert_eq!(t.protected_tools, cfg.compression.protected_tools);
}

/// Issue 20, item 6: the micro reclaim gate is off unless asked for, and takes a number of
/// tokens or `"auto"` from a file, a profile or the environment; anything else is refused
/// with an error that names the key and what it accepts.
#[test]
#[allow(clippy::result_large_err)]
fn the_micro_reclaim_gate_is_a_number_or_auto() {
    let gate = |toml: &str| {
        ConfigLoader::new()
            .toml(&format!("[compression]\n{toml}\n"))
            .load()
            .map(|(c, _)| c)
            .map(|c| c.compression.micro_compact_min_reclaim_tokens)
    };
    assert_eq!(
        Config::default()
            .compression
            .micro_compact_min_reclaim_tokens,
        ReclaimGate::Auto
    );
    assert_eq!(gate("micro_compact = true").unwrap(), ReclaimGate::Auto);
    assert_eq!(
        gate("micro_compact_min_reclaim_tokens = 0").unwrap(),
        ReclaimGate::Off
    );
    assert_eq!(
        gate("micro_compact_min_reclaim_tokens = 4000").unwrap(),
        ReclaimGate::Tokens(4_000)
    );
    assert_eq!(
        gate("micro_compact_min_reclaim_tokens = \"auto\"").unwrap(),
        ReclaimGate::Auto
    );
    assert_eq!(
        gate("micro_compact_min_reclaim_tokens = \"AUTO\"").unwrap(),
        ReclaimGate::Auto
    );
    for bad in ["-1", "1.5", "\"on\"", "\"4000\"", "\"\"", "true", "[1]"] {
        let err = gate(&format!("micro_compact_min_reclaim_tokens = {bad}")).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("micro_compact_min_reclaim_tokens")
                && text.contains("a number of tokens (0: no gate) or \"auto\""),
            "{bad}: {text}"
        );
    }
    // A long bad value is not echoed whole.
    let long = "x".repeat(500);
    let err = gate(&format!("micro_compact_min_reclaim_tokens = \"{long}\"")).unwrap_err();
    assert!(!err.to_string().contains(&long[..100]), "{err}");
    // The core planner gets the fixed part; "auto" is computed per pass by the compressor
    // (which exists with feature `llm`).
    #[cfg(feature = "llm")]
    {
        let c = ConfigLoader::new()
            .toml("[compression]\nmicro_compact_min_reclaim_tokens = 2500\n")
            .load()
            .unwrap()
            .0;
        assert_eq!(
            crate::compressor::micro_config(&c).min_reclaim_tokens,
            2_500
        );
        let c = ConfigLoader::new()
            .toml("[compression]\nmicro_compact_min_reclaim_tokens = \"auto\"\n")
            .load()
            .unwrap()
            .0;
        assert_eq!(crate::compressor::micro_config(&c).min_reclaim_tokens, 0);
    }
    // Serialized back as written, so a profile (merged through JSON) keeps it.
    let c = ConfigLoader::new()
        .toml(
            "[compression]\nmicro_compact_min_reclaim_tokens = \"auto\"\n\
             [profiles.fixed]\nmicro_compact_min_reclaim_tokens = 300\n\
             [profiles.bad]\nmicro_compact_min_reclaim_tokens = \"sometimes\"\n",
        )
        .load()
        .unwrap()
        .0;
    assert_eq!(
        serde_json::to_value(&c.compression).unwrap()["micro_compact_min_reclaim_tokens"],
        "auto"
    );
    assert_eq!(
        c.with_profile("fixed")
            .unwrap()
            .compression
            .micro_compact_min_reclaim_tokens,
        ReclaimGate::Tokens(300)
    );
    let err = c.with_profile("bad").unwrap_err().to_string();
    assert!(
        err.contains("profile `bad`") && err.contains("\"auto\""),
        "{err}"
    );
    // The environment.
    figment::Jail::expect_with(|jail| {
        jail.set_env(
            "HERMES_COMPACTION__COMPRESSION__MICRO_COMPACT_MIN_RECLAIM_TOKENS",
            "auto",
        );
        assert_eq!(
            ConfigLoader::new()
                .env()
                .load()
                .unwrap()
                .0
                .compression
                .micro_compact_min_reclaim_tokens,
            ReclaimGate::Auto
        );
        jail.set_env(
            "HERMES_COMPACTION__COMPRESSION__MICRO_COMPACT_MIN_RECLAIM_TOKENS",
            "6000",
        );
        assert_eq!(
            ConfigLoader::new()
                .env()
                .load()
                .unwrap()
                .0
                .compression
                .micro_compact_min_reclaim_tokens,
            ReclaimGate::Tokens(6_000)
        );
        jail.set_env(
            "HERMES_COMPACTION__COMPRESSION__MICRO_COMPACT_MIN_RECLAIM_TOKENS",
            "-5",
        );
        let err = ConfigLoader::new().env().load().unwrap_err().to_string();
        assert!(err.contains("micro_compact_min_reclaim_tokens"), "{err}");
        Ok(())
    });
    // The command-line form.
    assert_eq!("auto".parse::<ReclaimGate>(), Ok(ReclaimGate::Auto));
    assert_eq!("0".parse::<ReclaimGate>(), Ok(ReclaimGate::Off));
    assert_eq!(" 128 ".parse::<ReclaimGate>(), Ok(ReclaimGate::Tokens(128)));
    let err = "-3".parse::<ReclaimGate>().unwrap_err();
    assert!(err.contains("\"auto\""), "{err}");
}

/// Issue 25, item 3: the cadence is an unsigned count; 0 and negatives are refused with
/// an error naming the key (they used to read as 1).
#[test]
fn cadence_below_one_is_refused_naming_the_key() {
    for bad in ["0", "-3", "-1"] {
        let err = ConfigLoader::new()
            .toml(&format!(
                "[compression]\nmicro_compact_every_n_turns = {bad}\n"
            ))
            .load()
            .unwrap_err()
            .to_string();
        assert!(err.contains("micro_compact_every_n_turns"), "{bad}: {err}");
    }
    let err = ConfigLoader::new()
        .toml("[compression]\nmicro_compact_every_n_turns = 0\n")
        .load()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "configuration: `compression.micro_compact_every_n_turns` = 0 is invalid: allowed 1 or more"
    );
    let cfg = ConfigLoader::new()
        .toml("[compression]\nmicro_compact_every_n_turns = 4\n")
        .load()
        .unwrap()
        .0;
    assert_eq!(cfg.micro_every_n_turns(), 4);
}

/// Issue 25, item 3: `target_ratio` was renamed `tail_ratio`; files, the environment and
/// profiles that use the old name keep working, with a warning naming both.
#[test]
#[allow(clippy::result_large_err)]
fn the_old_tail_key_is_a_deprecated_alias() {
    let (old, warnings) = ConfigLoader::new()
        .toml("[compression]\ntarget_ratio = 0.25\n")
        .load()
        .unwrap();
    let (new, none) = ConfigLoader::new()
        .toml("[compression]\ntail_ratio = 0.25\n")
        .load()
        .unwrap();
    assert_eq!(old, new);
    assert_eq!(old.regions().tail_ratio, 0.25);
    assert!(none.is_empty(), "{none:?}");
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("compression.target_ratio")
            && warnings[0].contains("compression.tail_ratio"),
        "{warnings:?}"
    );
    // The old name is range-checked under the new one.
    let err = ConfigLoader::new()
        .toml("[compression]\ntarget_ratio = 0.9\n")
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("compression.tail_ratio"), "{err}");
    // Both names at once is ambiguous, and refused.
    assert!(
        ConfigLoader::new()
            .toml("[compression]\ntarget_ratio = 0.1\ntail_ratio = 0.2\n")
            .load()
            .is_err()
    );
    // A profile with the old name.
    let (cfg, warnings) = ConfigLoader::new()
        .toml("[profiles.sub]\ntarget_ratio = 0.3\n")
        .load()
        .unwrap();
    assert!(
        warnings[0].contains("profiles.sub.target_ratio"),
        "{warnings:?}"
    );
    assert_eq!(cfg.with_profile("sub").unwrap().compression.tail_ratio, 0.3);
    // The environment.
    figment::Jail::expect_with(|jail| {
        jail.set_env("HERMES_COMPACTION__COMPRESSION__TARGET_RATIO", "0.2");
        let (cfg, warnings) = ConfigLoader::new().env().load().expect("loads");
        assert_eq!(cfg.compression.tail_ratio, 0.2);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        Ok(())
    });
}

/// Issue 25, item 3: one minimum context length, stated once.
#[test]
fn the_context_length_minimum_is_stated_once() {
    assert_eq!(
        MIN_CONTEXT_LENGTH_ALLOWED,
        format!("{MIN_CONTEXT_LENGTH} tokens or more")
    );
    let at = format!("[model]\ncontext_length = {MIN_CONTEXT_LENGTH}\n");
    assert!(ConfigLoader::new().toml(&at).load().is_ok());
    let below = format!("[model]\ncontext_length = {}\n", MIN_CONTEXT_LENGTH - 1);
    let err = ConfigLoader::new()
        .toml(&below)
        .load()
        .unwrap_err()
        .to_string();
    assert!(err.contains("model.context_length"), "{err}");
}

/// The environment types a value by the key table: a text key takes the value as written, so
/// a model named like a number is a name (it was read as a number and refused).
#[test]
#[allow(clippy::result_large_err)]
fn environment_values_are_typed_by_the_key_table() {
    figment::Jail::expect_with(|jail| {
        jail.set_env("HERMES_COMPACTION__MODEL__NAME", "4");
        jail.set_env("HERMES_COMPACTION__COMPRESSION__THRESHOLD", "0.7");
        jail.set_env(
            "HERMES_COMPACTION__AUXILIARY__COMPRESSION__API_KEY_ENV",
            "\"KEY\"",
        );
        let (cfg, _) = ConfigLoader::new().env().load().expect("loads");
        assert_eq!(cfg.model.name, "4");
        assert_eq!(cfg.compression.threshold, 0.7);
        assert_eq!(cfg.auxiliary.compression.api_key_env, "KEY");
        Ok(())
    });
    // Every key has its variable, and the ranges are the validator's.
    let keys = Config::keys();
    assert!(keys.iter().all(|k| k.env_var().starts_with(ENV_PREFIX)));
    for k in &keys {
        match k.range {
            Some(KeyRange::Float(lo, hi)) => {
                assert_eq!(Config::f64_range(&k.path), Some((lo, hi)))
            }
            Some(KeyRange::Count(lo, hi)) => {
                assert_eq!(Config::u64_range(&k.path), Some((lo, hi)))
            }
            None => assert!(Config::f64_range(&k.path).is_none()),
        }
    }
    assert!(keys.iter().any(|k| k.range.is_some()));
}
