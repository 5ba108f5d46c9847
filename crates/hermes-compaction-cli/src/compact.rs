//! `compact`: one kind of pass over one transcript, and the pass runner `session compact`
//! shares.

use std::sync::Arc;
use std::time::Duration;

use hermes_compaction::compressor::{Persistence, batch_config};
use hermes_compaction::core::batch::{self, BatchRequest, BatchStep, NothingReason};
use hermes_compaction::core::{Estimator, Transcript, parse};
use hermes_compaction::store::{Commit, stamp_edit};
use hermes_compaction::{Compressor, Config, MicroOutcomeKind, Outcome};

use crate::cli::{CompactArgs, Mode};
use crate::input::{Input, Strictness};
use crate::setup::{build_summarizer, load_config, telemetry_to_file};
use crate::{Error, Result, runtime, write_atomically, write_out};

/// What a run of passes did. Counts only.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassSummary {
    /// `batch`, `prune` or `micro`.
    pub mode: &'static str,
    /// The last outcome (`summarized`, `pruned`, `absorbed`, `not_needed`, ...).
    pub outcome: String,
    /// Passes that changed the transcript.
    pub passes: u32,
    /// Messages before and after.
    pub messages_before: usize,
    /// Messages after.
    pub messages_after: usize,
    /// Tokens before and after (estimated).
    pub tokens_before: u64,
    /// Tokens after.
    pub tokens_after: u64,
    /// The first message index any pass rewrote.
    pub earliest_changed_index: Option<usize>,
    /// Tool outputs in the protected tail demoted as a last resort (batch only).
    pub demoted_tail_outputs: usize,
    /// Wall time of the passes.
    pub duration: Duration,
}

impl std::fmt::Display for PassSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mode={} outcome={} passes={} messages={}->{} tokens={}->{} earliest_changed={} demoted_tail_outputs={} ms={}",
            self.mode,
            self.outcome,
            self.passes,
            self.messages_before,
            self.messages_after,
            self.tokens_before,
            self.tokens_after,
            self.earliest_changed_index
                .map_or("-".to_owned(), |i| i.to_string()),
            self.demoted_tail_outputs,
            self.duration.as_millis(),
        )
    }
}

/// Runs `compact`: reads, compacts, writes the output atomically and prints the one-line
/// [`PassSummary`] to `out`.
pub fn run(args: &CompactArgs, out: &mut dyn std::io::Write) -> Result<()> {
    let config = load_config(args.engine.config.as_deref(), args.engine.context_length)?;
    let summarizer = build_summarizer(&config, args.engine.summarizer)?;
    let input = Input::read(&args.input, Strictness::COMPACTION)?;
    let _telemetry = args
        .telemetry
        .as_deref()
        .map(telemetry_to_file)
        .transpose()?;
    let session = args
        .input
        .file_stem()
        .map_or("transcript".into(), |s| s.to_string_lossy().into_owned());
    let mut c = compressor(config, args.mode, summarizer, &session);
    let mut t = c.transcript(input.messages);
    let rt = runtime()?;
    let summary = rt.block_on(run_passes(&mut c, &mut t, args.mode, args.passes, None))?;
    write_atomically(&args.output, parse::to_jsonl(t.messages()).as_bytes())?;
    write_out(out, &summary.to_string())
}

/// A compressor for `mode`: micro mode turns `compression.micro_compact` on and runs every
/// turn.
pub fn compressor(
    mut config: Config,
    mode: Mode,
    summarizer: Arc<dyn hermes_compaction::llm::Summarizer>,
    session: &str,
) -> Compressor {
    if mode == Mode::Micro {
        config.compression.micro_compact = true;
        config.compression.micro_compact_every_n_turns = 1;
    }
    Compressor::new(config, summarizer, Arc::new(Estimator::default()), session)
}

/// Runs the passes of `mode` on `t`. With `persistence`, prune passes are committed here and
/// batch and micro passes by the compressor (which must have been built `with_store`).
///
/// A batch pass that fails is an error and leaves `t` unchanged; nothing to do is not.
pub async fn run_passes(
    c: &mut Compressor,
    t: &mut Transcript,
    mode: Mode,
    max_passes: Option<u32>,
    persistence: Option<&mut Persistence>,
) -> Result<PassSummary> {
    let mut s = PassSummary {
        mode: match mode {
            Mode::Batch => "batch",
            Mode::Prune => "prune",
            Mode::Micro => "micro",
        },
        outcome: "not_needed".into(),
        messages_before: t.len(),
        messages_after: t.len(),
        tokens_before: t.current_tokens(),
        tokens_after: t.current_tokens(),
        ..PassSummary::default()
    };
    let started = std::time::Instant::now();
    match mode {
        Mode::Batch => {
            let r = c.compress(t, None).await;
            s.outcome = r.outcome.as_str().into();
            s.demoted_tail_outputs = r.demoted_tail_outputs;
            s.earliest_changed_index = r.earliest_changed_index;
            if matches!(r.outcome, Outcome::Summarized | Outcome::Pruned) {
                s.passes = 1;
            }
            if r.outcome == Outcome::Failed {
                return Err(Error::Pass(format!(
                    "the batch pass failed ({:?}); nothing was written",
                    r.failure
                )));
            }
        }
        Mode::Prune => prune(c, t, persistence, &mut s).await?,
        Mode::Micro => {
            // Without a limit, stop at the latest when every message could have been absorbed.
            let limit = max_passes.unwrap_or(u32::MAX).min(t.len() as u32 * 2 + 4);
            let mut attempts = 0u32;
            while s.passes < limit && attempts < limit.saturating_mul(2) {
                attempts += 1;
                let Some(r) = c.finalize_turn(t).await else {
                    break;
                };
                s.outcome = r.outcome.as_str().into();
                let changed = matches!(
                    r.outcome,
                    MicroOutcomeKind::Absorbed
                        | MicroOutcomeKind::Progressed
                        | MicroOutcomeKind::Defrag
                );
                if let Some(i) = r.earliest_changed_index.filter(|_| changed) {
                    s.earliest_changed_index =
                        Some(s.earliest_changed_index.map_or(i, |e| e.min(i)));
                }
                if changed {
                    s.passes += 1;
                } else if !matches!(
                    r.outcome,
                    MicroOutcomeKind::ExchangeSkipped | MicroOutcomeKind::DefragFailed
                ) {
                    break;
                }
            }
        }
    }
    s.duration = started.elapsed();
    s.messages_after = t.len();
    s.tokens_after = t.current_tokens();
    Ok(s)
}

/// One forced prune-only pass, planned by core and committed here.
async fn prune(
    c: &mut Compressor,
    t: &mut Transcript,
    persistence: Option<&mut Persistence>,
    s: &mut PassSummary,
) -> Result<()> {
    let cfg = batch_config(c.config());
    let req = BatchRequest {
        force: true,
        prune_only: true,
        focus: None,
        compacted: c.state().compacted,
    };
    let plan = batch::plan_batch(t, c.threshold_tokens(), &cfg, &req, c.counter());
    match plan.step {
        BatchStep::PruneOnly { .. } => {}
        BatchStep::Nothing(NothingReason::IrreducibleFloor) => {
            s.outcome = "irreducible_floor".into();
            return Ok(());
        }
        _ => {
            s.outcome = "nothing_to_prune".into();
            return Ok(());
        }
    }
    let mut edit = batch::assemble(t, &plan, &[], &cfg)
        .map_err(|e| Error::Pass(format!("the prune pass cannot be applied: {e}")))?;
    if let Some(p) = persistence {
        let mut commit = Commit::from_edit(p.generation, &edit, t.messages())?;
        let ids = p.store.archive_and_compact(&p.session, &mut commit).await?;
        p.generation += 1;
        if !stamp_edit(&mut edit, &ids) {
            return Err(Error::Pass(
                "the store returned a different number of rows than the pass wrote".into(),
            ));
        }
    }
    s.earliest_changed_index = edit.earliest_changed_index();
    edit.apply_to(t, c.counter())
        .map_err(|e| Error::Pass(format!("the prune pass cannot be applied: {e}")))?;
    s.outcome = "pruned".into();
    s.passes = 1;
    Ok(())
}
