//! Durable per-session compaction state.

use compaction_store::CompactionState;

on_both_backends! {
    /// Anti-thrash state survives a restart and is kept per session.
    async fn compaction_state_survives_restart(b) {
        b.store.create_session("s").await.unwrap();
        b.store.create_session("other").await.unwrap();
        assert_eq!(b.store.compaction_state("s").await.unwrap(), CompactionState::default());
        let state = CompactionState {
            cooldown_until_ms: Some(1_800_000_000_123),
            ineffective_count: 2,
            extra: serde_json::json!({"cursor": 17, "note": "nul \u{0} ok", "nested": [1, {"a": null}]}),
        };
        b.store.set_compaction_state("s", &state).await.unwrap();
        let again = b.reconnect().await;
        assert_eq!(again.compaction_state("s").await.unwrap(), state);
        assert_eq!(again.compaction_state("other").await.unwrap(), CompactionState::default());
        // Clearing works, and state does not touch the generation.
        again.set_compaction_state("s", &CompactionState::default()).await.unwrap();
        assert_eq!(b.store.compaction_state("s").await.unwrap(), CompactionState::default());
        assert_eq!(b.store.generation("s").await.unwrap(), 0);
    }
}
