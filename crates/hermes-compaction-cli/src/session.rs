//! `session import | export | compact`, and `demo`: the store from the command line. Opening
//! a `--db` is the store's [`Store::open`](hermes_compaction::store::Store::open), an export its
//! [`export_jsonl`], a compaction the facade's [`one_shot_session`].

use std::path::Path;

use compaction_sim::render::table;
use compaction_sim::{Options, Policy};
use hermes_compaction::core::Message;
use hermes_compaction::oneshot::one_shot_session;
use hermes_compaction::store::{Access, ExportForm, export_jsonl};
use hermes_compaction::{Compressor, CompressorBuilder, OneShot};

use crate::cli::{DemoArgs, EngineArgs, ExportFormat, SessionCommand, StoreArgs};
use crate::compact::{check, with_note};
use crate::history;
use crate::input::{self, Strictness};
use crate::setup::{build_summarizer, compressor_builder, load_config};
use crate::simulate::simulate;
use crate::{Result, runtime, with_store, write_out};

/// Runs a `session` subcommand.
pub fn run(cmd: SessionCommand, out: &mut dyn std::io::Write) -> Result<()> {
    let rt = runtime()?;
    let text = match cmd {
        SessionCommand::Import {
            file,
            input_format,
            db,
            session,
        } => {
            let input = input::read(&file, input_format.format, Strictness::COMPACTION)?;
            let id = match session {
                Some(id) => id,
                None => default_session_id(&file)?,
            };
            rt.block_on(import(&db, &id, input.messages))?
        }
        SessionCommand::Export {
            store,
            all,
            wire,
            format,
        } => {
            let form = match (format, all, wire) {
                (ExportFormat::Anthropic, true, _) => {
                    return Err(crate::Error::Config(
                        "--all writes library metadata: use it with --format openai".into(),
                    ));
                }
                (ExportFormat::Anthropic, false, _) => ExportForm::Anthropic,
                (ExportFormat::Openai, true, _) => ExportForm::All,
                (ExportFormat::Openai, false, true) => ExportForm::Wire,
                (ExportFormat::Openai, false, false) => ExportForm::Stored,
            };
            rt.block_on(with_store(&store.db, Access::Read, async |db| {
                Ok(export_jsonl(&*db, &store.session, form).await?)
            }))?
        }
        SessionCommand::Compact {
            store,
            pass,
            engine,
        } => {
            let mode = pass.one_shot()?;
            let builder = compressor_builder(&engine, mode.clone())?;
            rt.block_on(compact(&store, builder, mode))?
        }
        SessionCommand::History { store } => rt.block_on(history::history(&store))?,
        SessionCommand::Undo { store, to } => rt.block_on(history::undo(&store, to))?,
        SessionCommand::Diff {
            store,
            generation,
            config,
        } => {
            // Only for its redaction ruleset (`compression.redaction_rules`), installed by
            // the loader.
            load_config(&EngineArgs {
                config,
                ..Default::default()
            })?;
            rt.block_on(history::diff(&store, generation))?
        }
        SessionCommand::Pin {
            store,
            index,
            unpin,
        } => rt.block_on(history::pin(&store, index, !unpin))?,
    };
    write_out(out, &text)
}

/// `session compact`: `builder`'s one-shot run over the stored session, every pass committed
/// by the facade ([`one_shot_session`]); the summary line, after a `note:` line when the run
/// has one.
pub async fn compact(
    store: &StoreArgs,
    builder: CompressorBuilder,
    mode: OneShot,
) -> Result<String> {
    with_store(&store.db, Access::Existing, async |db| {
        let run = one_shot_session(builder, db, &store.session, mode).await?;
        check(
            &run.report,
            &if run.generation_confirmed {
                format!(
                    "the store is at generation {} (it was at {} when the run started)",
                    run.generation_after, run.generation_before
                )
            } else {
                format!(
                    "the store's generation is unconfirmed: it could not be read after the \
                     failure (it was at {} when the run started)",
                    run.generation_before
                )
            },
        )?;
        Ok(with_note(&run.report, run.to_string()))
    })
    .await
}

/// Stores `messages` as the new session `id`; returns the one-line result.
pub async fn import(db: &str, id: &str, mut messages: Vec<Message>) -> Result<String> {
    with_store(db, Access::Create, async |store| {
        // One transaction: a failed import leaves no session behind.
        let ids = store.import_session(id, &mut messages).await?;
        Ok(format!("imported {} messages into session {id}", ids.len()))
    })
    .await
}

/// `demo`: the bundled example session through the embedded defaults.
pub fn demo(args: &DemoArgs, out: &mut dyn std::io::Write) -> Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| crate::Error::Io {
        what: "cannot create a temporary directory".into(),
        source: e,
    })?;
    let db = match &args.db {
        Some(db) => db.clone(),
        None => tmp.path().join("demo.db").display().to_string(),
    };
    let messages = compaction_sim::example::session();
    let session = format!(
        "demo-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    );
    let config = load_config(&EngineArgs {
        context_length: Some(args.context_length),
        ..EngineArgs::default()
    })?;
    let rt = runtime()?;
    let mut text = String::new();
    text.push_str(&rt.block_on(import(&db, &session, messages.clone()))?);
    text.push_str(&format!(" (SQLite store {db})\n"));
    write_out(out, &text)?;
    // One batch pass, committed with archive_and_compact.
    let store = StoreArgs { db, session };
    let summarizer = build_summarizer(&config, None)?;
    let builder = Compressor::builder(config.clone()).summarizer(summarizer);
    write_out(
        out,
        &rt.block_on(compact(&store, builder, OneShot::batch()))?,
    )?;
    let inputs = vec![("coding-agent.jsonl".to_owned(), messages)];
    let policies = [
        Policy::None,
        Policy::Batch,
        Policy::BatchNaive,
        Policy::Micro,
    ];
    let variants = Policy::variants(&policies, &config, None)?;
    let sim = simulate(&inputs, &variants, &config, None, &Options::default())?;
    let rows: Vec<_> = sim.totals.iter().collect();
    write_out(
        out,
        &format!(
            "\nreplay of the example session:\n{}\n{}\n",
            table("coding-agent.jsonl", &rows),
            demo_verdict(&rows)
        ),
    )
}

/// The demo's last word: what the table says and which policy to pick, read off its rows
/// (the cheapest by effective cost among the policies that never overflowed the window).
fn demo_verdict(rows: &[&compaction_sim::Row]) -> String {
    let none = rows.iter().find(|r| r.policy == "none");
    let pick = rows
        .iter()
        .filter(|r| r.policy != "none" && r.overflows == 0 && r.unit_overflows == 0)
        .min_by(|a, b| a.effective_cost.total_cmp(&b.effective_cost));
    let Some(pick) = pick else {
        return "What this says: every compacting policy overflowed this window at least once; \
                raise --context-length or lower the threshold."
            .into();
    };
    let share = |r: &compaction_sim::Row, n: u64| 100.0 * n as f64 / r.far_identifiers as f64;
    let against = none
        .filter(|n| n.effective_cost > 0.0)
        .map_or(String::new(), |n| {
            format!(
                ", {:.0}% of what never compacting costs",
                100.0 * pick.effective_cost / n.effective_cost
            )
        });
    let kept = if pick.far_identifiers == 0 {
        " The session has no far identifiers to keep.".to_owned()
    } else {
        let none_kept = none
            .filter(|n| n.far_identifiers > 0)
            .map_or(String::new(), |n| {
                format!(
                    ", where never compacting keeps {:.1}% and {:.1}%",
                    share(n, n.far_held),
                    share(n, n.far_held_content)
                )
            });
        format!(
            " Of the far identifiers (what later answers use from more than 10 messages back) \
             it keeps {:.1}% in its prompts and {:.1}% in unchanged messages{none_kept}.",
            share(pick, pick.far_held),
            share(pick, pick.far_held_content)
        )
    };
    format!(
        "What this says: each column replays the same requests under one policy; effective cost \
         is the prompt cost plus the re-reads forgetting forces (docs/ECONOMICS.md). Pick the \
         cheapest policy that never overflows: here `{}`, {:.2}M issue units{against}.{kept} \
         `batch` is the library's default; `micro` pays in smaller, more frequent passes.",
        pick.policy,
        pick.effective_cost / 1e6,
    )
}

/// The file name without extension, when it is a valid session id.
fn default_session_id(file: &Path) -> Result<String> {
    let stem = file
        .file_stem()
        .map_or("session".into(), |s| s.to_string_lossy().into_owned());
    crate::paths::session_id(&stem).map_err(|e| {
        crate::Error::Config(format!(
            "{}: the file name is not a usable session id ({e}); pass --session",
            file.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::demo_verdict;

    #[test]
    fn the_verdict_names_a_policy_that_never_overflowed_or_says_none_did() {
        let row = |policy: &str, cost: f64, overflows: u64| compaction_sim::Row {
            policy: policy.into(),
            effective_cost: cost,
            overflows,
            ..compaction_sim::Row::default()
        };
        let (none, mut batch, micro) = (
            row("none", 10e6, 3),
            row("batch", 6e6, 0),
            row("micro", 5e6, 1),
        );
        (
            batch.far_identifiers,
            batch.far_held,
            batch.far_held_content,
        ) = (200, 150, 20);
        let verdict = demo_verdict(&[&none, &batch, &micro]);
        assert!(
            verdict
                .contains("here `batch`, 6.00M issue units, 60% of what never compacting costs."),
            "{verdict}"
        );
        assert!(
            verdict.contains("it keeps 75.0% in its prompts and 10.0% in unchanged messages."),
            "{verdict}"
        );
        // Never compacting has no far identifiers in this table: nothing to set beside.
        assert!(
            !verdict.contains("where never compacting keeps"),
            "{verdict}"
        );
        let mut kept_all = none.clone();
        (
            kept_all.far_identifiers,
            kept_all.far_held,
            kept_all.far_held_content,
        ) = (200, 200, 190);
        let verdict = demo_verdict(&[&kept_all, &batch, &micro]);
        assert!(
            verdict.contains(
                "10.0% in unchanged messages, where never compacting keeps 100.0% and 95.0%."
            ),
            "{verdict}"
        );
        let verdict = demo_verdict(&[&none, &micro]);
        assert_eq!(
            verdict,
            "What this says: every compacting policy overflowed this window at least once; \
             raise --context-length or lower the threshold."
        );
    }
}
