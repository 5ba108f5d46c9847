//! The compressor's runtime state: everything that changes as the session goes on. Its
//! fields are private to the `compressor` module (the hooks and the pass runner, `pass`);
//! the other modules change it through the methods below, each named for what happened.

#[cfg(feature = "store")]
use compaction_core::Message;
use compaction_core::micro::{MicroEvent, MicroPlan, MicroPlanner, MicroRequest, MicroState};

use super::ThrashState;
use super::pass::LastPass;

/// The compressor's runtime state.
#[derive(Debug, Default)]
pub(crate) struct Runtime {
    pub(super) state: ThrashState,
    /// The state as last written to or read from the store (`None`: neither yet).
    pub(super) state_stored: Option<ThrashState>,
    pub(super) epoch: u64,
    pub(super) awaiting_effect: bool,
    pub(super) overflow_attempts: u32,
    /// Proactive prune stays disarmed until the transcript reaches this size again.
    pub(super) proactive_rearm_at: Option<u64>,
    /// When the last model request was made (unix ms), for the cache time-to-live rule.
    pub(super) last_request_ms: Option<u64>,
    /// What the last model request held, for a warm-cache summary request.
    pub(super) last_sent: Option<SentRequest>,
    /// A pass was applied in memory after its commit failed: the store's active rows no longer
    /// match the transcript until the next store write resynchronises them.
    #[cfg(feature = "store")]
    pub(super) resync_pending: bool,
    /// A store write met a session another writer changed in a way the transcript could not
    /// adopt (anything but pins): the store holds another transcript until
    /// [`Compressor::reload`](super::Compressor::reload).
    #[cfg(feature = "store")]
    pub(super) store_moved: bool,
    /// Messages the store never saw that an overflow pass applied without its commit removed
    /// from the transcript: [`Compressor::reload`](super::Compressor::reload) writes them, so they are not lost. Cleared
    /// by a successful resync (which stores the pass's summary of them instead).
    #[cfg(feature = "store")]
    pub(super) unpersisted_removed: Vec<Message>,
    /// The next manual pass is prune-only (set by `one_shot` with `OneShot::Prune`).
    pub(super) prune_only_once: bool,
    pub(super) micro: MicroRuntime,
    /// The summary prepared ahead for the next pass (`compression.prepare_at`), if one was
    /// started and is not settled yet.
    pub(super) prepared: Option<super::prepare::Candidate>,
    /// Running totals of prepared summaries.
    pub(super) prepared_totals: crate::report::PreparedTotals,
    /// What became of the last candidate settled.
    pub(super) last_prepared: Option<crate::report::PreparedUse>,
    /// A trigger was put off to the next request for the summary prepared ahead (once: the
    /// next pass clears it).
    pub(super) prepared_deferred: bool,
    /// What `undo_last` needs to revert the last pass applied in memory.
    pub(super) last_pass: Option<LastPass>,
    /// A compaction the model asked for (`compact_context`), run at the next `before_request`.
    pub(super) requested: Option<Requested>,
    /// A hash of the latest real user message when the model last asked: one request per
    /// user turn.
    pub(super) requested_turn: Option<Option<u64>>,
    /// Running insertion-trim totals for telemetry (a lock: the trim hooks take `&self`).
    #[cfg(all(feature = "store", feature = "telemetry"))]
    pub(super) trim_totals: std::sync::Mutex<compaction_telemetry::TrimAccumulator>,
}

/// The agent's last request, as the transcript's first `len` messages in its `lineage`
/// ([`Transcript::lineage`](compaction_core::Transcript::lineage)): unchanged while the
/// transcript only grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SentRequest {
    pub(crate) lineage: u64,
    pub(crate) len: usize,
}

/// A request waiting for the next `before_request`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Requested {
    pub(crate) focus: Option<String>,
}

/// Micro state the compressor keeps between passes.
#[derive(Clone, Debug, Default)]
pub(crate) struct MicroRuntime {
    /// Core's planner: the micro state and what earlier plans found (content-free).
    pub(crate) planner: MicroPlanner,
    pub(super) turns: u64,
    pub(super) rounds: u64,
    pub(super) passes_total: u64,
    pub(super) tokens_saved_total: i64,
}

impl Runtime {
    /// The micro state (cursor, rolling summary, failure counts).
    pub(crate) fn micro_state(&self) -> &MicroState {
        &self.micro.planner.state
    }

    /// Advances the turn (`tool_round: false`) or tool-round counter; whether the hook is
    /// due on this call, every `every`-th one.
    pub(crate) fn micro_tick(&mut self, tool_round: bool, every: u64) -> bool {
        let counter = if tool_round {
            &mut self.micro.rounds
        } else {
            &mut self.micro.turns
        };
        *counter += 1;
        *counter % every == 0
    }

    /// Core's micro plan for `req`, from the compressor's micro state.
    pub(crate) fn micro_plan(&mut self, req: &MicroRequest<'_>) -> MicroPlan {
        self.micro.planner.plan(req)
    }

    /// Reports what became of a micro plan to core's planner.
    pub(crate) fn micro_record(&mut self, event: MicroEvent<'_>) {
        self.micro.planner.record(event);
    }

    /// Counts a finished micro pass that saved `saved` tokens; the running totals.
    pub(crate) fn count_micro_pass(&mut self, saved: i64) -> (u64, i64) {
        self.micro.passes_total += 1;
        self.micro.tokens_saved_total += saved;
        (self.micro.passes_total, self.micro.tokens_saved_total)
    }

    /// The next manual pass is prune-only (`on`), or not.
    pub(crate) fn prune_next(&mut self, on: bool) {
        self.prune_only_once = on;
    }

    /// Keeps how to revert the pass about to be applied.
    pub(crate) fn keep_last_pass(&mut self, last: LastPass) {
        self.last_pass = Some(last);
    }

    /// Takes what reverts the last pass (one level).
    pub(crate) fn take_last_pass(&mut self) -> Option<LastPass> {
        self.last_pass.take()
    }

    /// After an undo: the anti-thrash and micro state from before the reverted pass, and
    /// usage measured before the undo no longer applies.
    pub(crate) fn restore(&mut self, thrash: ThrashState, micro: MicroState) {
        self.state = thrash;
        self.micro.planner.state = micro;
        self.epoch += 1;
    }

    /// Whether a compaction the model asked for waits for the next `before_request`.
    pub(crate) fn compaction_requested(&self) -> bool {
        self.requested.is_some()
    }

    /// The user turn the model last asked in (a hash of its user message), if it asked.
    pub(crate) fn requested_turn(&self) -> Option<Option<u64>> {
        self.requested_turn
    }

    /// The model asked for a compaction in `turn`.
    pub(crate) fn request(&mut self, requested: Requested, turn: Option<u64>) {
        self.requested = Some(requested);
        self.requested_turn = Some(turn);
    }

    /// The session's running insertion-trim totals (a lock: the trim hooks take `&self`;
    /// `trim::emit_trim` records each trim in them).
    #[cfg(all(feature = "store", feature = "telemetry"))]
    pub(crate) fn trim_totals(&self) -> &std::sync::Mutex<compaction_telemetry::TrimAccumulator> {
        &self.trim_totals
    }
}
