//! Maps compressor reports and trim statuses to telemetry events (counts only) and emits them.

use compaction_core::batch::BatchPlan;
use compaction_llm::ErrorClass;
use compaction_telemetry::{
    BatchAttempt, BatchOutcome, FailureClass, MicroPass, PassLine, TriggerSource, Window,
};

use crate::config::Config;
use crate::report::{BatchReport, Detail, FailureKind, MicroReport, Outcome, PassReport, Trigger};

/// What every pass line takes from its report (the window at the report's threshold, the
/// counts) and from the configuration (the main model): one helper for every kind.
fn shared<E: PassLine, D: Detail>(ev: E, config: &Config, report: &PassReport<D>) -> E {
    let window = Window {
        threshold_tokens: report.threshold_tokens,
        context_limit: config.model.context_length,
    };
    let main_model = (!config.model.name.is_empty()).then(|| config.model.name.clone());
    ev.pass(Some(window), &report.stats, main_model)
}

/// The telemetry event for a batch report.
pub fn batch_attempt(
    session_id: &str,
    config: &Config,
    report: &BatchReport,
    plan: Option<&BatchPlan>,
    summary_model: &str,
) -> BatchAttempt {
    let trigger = match report.detail.trigger {
        // The model's request runs at the planned check: the line keeps calling it that.
        Trigger::BeforeRequest | Trigger::Requested => TriggerSource::Preflight,
        Trigger::Usage => TriggerSource::Usage,
        Trigger::Overflow => TriggerSource::OverflowError,
        Trigger::Manual => TriggerSource::Manual,
        Trigger::Proactive => TriggerSource::Proactive,
    };
    let outcome = match report.outcome {
        Outcome::Summarized => BatchOutcome::Compacted,
        Outcome::Pruned => BatchOutcome::PruneOnly,
        Outcome::Failed => BatchOutcome::Failed,
        Outcome::IrreducibleFloor => BatchOutcome::IrreducibleFloor,
        Outcome::NotNeeded | Outcome::Skipped | Outcome::NoGain => BatchOutcome::Skipped,
    };
    let mut ev = shared(
        BatchAttempt::new(session_id, trigger, outcome),
        config,
        report,
    );
    if let Some(plan) = plan {
        let r = plan.region_tokens;
        ev = ev.regions(r.head, r.middle, r.tail);
    }
    ev.failure_class = report.failure_kind().map(failure_class);
    ev.prune_accepted = matches!(report.outcome, Outcome::Pruned);
    ev.fell_through = report.detail.fell_through;
    if let Some(p) = &report.detail.prepared {
        ev.prepared = Some(p.outcome.as_str().to_owned());
        ev.prepared_wasted_tokens = p.wasted_tokens();
    }
    ev.summary_model = matches!(report.outcome, Outcome::Summarized | Outcome::Failed)
        .then(|| summary_model.to_owned());
    ev
}

/// Emits the batch attempt line.
pub fn emit_batch(
    session_id: &str,
    config: &Config,
    report: &BatchReport,
    plan: Option<&BatchPlan>,
    summary_model: &str,
) {
    compaction_telemetry::emit_batch(&batch_attempt(
        session_id,
        config,
        report,
        plan,
        summary_model,
    ));
}

/// The telemetry class of a failure.
pub fn failure_class(f: FailureKind) -> FailureClass {
    match f {
        FailureKind::StaleGeneration => FailureClass::StaleGeneration,
        FailureKind::Store => FailureClass::Store,
        FailureKind::Plan => FailureClass::Other,
        FailureKind::Summarizer(c) => match c {
            ErrorClass::Auth => FailureClass::Auth,
            ErrorClass::Quota => FailureClass::Quota,
            ErrorClass::RateLimited => FailureClass::RateLimited,
            ErrorClass::Transient => FailureClass::Transient,
            ErrorClass::Network => FailureClass::Network,
            ErrorClass::ContextLengthExceeded => FailureClass::ContextLength,
            ErrorClass::MalformedResponse => FailureClass::Malformed,
            ErrorClass::EmptyOutput => FailureClass::Empty,
            ErrorClass::TruncatedOutput => FailureClass::Truncated,
            ErrorClass::DirectiveOutput => FailureClass::Directive,
            _ => FailureClass::Other,
        },
    }
}

/// The telemetry event for a micro report.
pub fn micro_pass(
    session_id: &str,
    config: &Config,
    report: &MicroReport,
    passes_total: u64,
    tokens_saved_total: i64,
    aux_model: &str,
) -> MicroPass {
    // The same vocabulary: a progress absorption renders as `absorbed` in the line.
    let mut ev = shared(MicroPass::new(session_id, report.outcome), config, report);
    ev.exchange_tokens = report.detail.exchange_tokens;
    ev.rolling_summary_tokens = report.detail.rolling_summary_tokens;
    ev.cursor = report.detail.cursor.unwrap_or(0) as u64;
    ev.passes_total = passes_total;
    ev.tokens_saved_total = tokens_saved_total;
    ev.aux_model = Some(aux_model.to_owned());
    ev
}

/// Emits the micro pass line.
pub fn emit_micro(
    session_id: &str,
    config: &Config,
    report: &MicroReport,
    passes_total: u64,
    tokens_saved_total: i64,
    aux_model: &str,
) {
    compaction_telemetry::emit_micro(&micro_pass(
        session_id,
        config,
        report,
        passes_total,
        tokens_saved_total,
        aux_model,
    ));
}
