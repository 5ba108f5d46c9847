use super::*;

const TOML: &str = "[compression]\nthreshold = 0.5\nmicro_compact = false\n\
        [compression.cache_custom]\nname = \"custom\"\ncache_ttl_secs = 10\n\
        [profiles.subagent]\nthreshold = 0.8\nmicro_compact = true\n\
        [profiles.subagent.cache_custom]\ncache_ttl_secs = 300\n\
        [profiles.typo]\nthreshhold = 0.8\n\
        [profiles.wrong_type]\nthreshold = \"high\"\n\
        [profiles.out_of_range]\nthreshold = 1.5\n";

#[test]
fn a_profile_overrides_compression_keys_and_nothing_else() {
    let config = ConfigLoader::new().toml(TOML).load().unwrap().0;
    let sub = config.with_profile("subagent").unwrap();
    assert_eq!(sub.compression.threshold, 0.8);
    assert!(sub.compression.micro_compact);
    // A nested table merges key by key.
    assert_eq!(sub.compression.cache_custom.cache_ttl_secs, 300);
    assert_eq!(sub.compression.cache_custom.name, "custom");
    assert_eq!(sub.model, config.model);
    assert_eq!(sub.auxiliary, config.auxiliary);
    let mut back = sub.clone();
    back.compression = config.compression.clone();
    assert_eq!(back, config, "only [compression] changed");
}

#[test]
fn bad_profiles_name_the_profile_and_the_problem() {
    let config = ConfigLoader::new().toml(TOML).load().unwrap().0;
    for (name, needle) in [
        ("missing", "no such profile"),
        ("typo", "threshhold"),
        ("wrong_type", "invalid type"),
    ] {
        let e = config.with_profile(name).unwrap_err().to_string();
        assert!(
            e.contains(&format!("profile `{name}`")) && e.contains(needle),
            "{e}"
        );
    }
    let e = config.with_profile("out_of_range").unwrap_err().to_string();
    assert!(e.contains("compression.threshold"), "{e}");
}
