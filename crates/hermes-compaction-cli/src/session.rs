//! `session import | export | compact`, and `demo`: the store from the command line. Opening
//! a `--db` is the store's [`Store::open`](hermes_compaction::store::Store::open), an export its
//! [`export_jsonl`].

use std::path::Path;
use std::sync::Arc;

use hermes_compaction::core::Estimator;
use hermes_compaction::store::{Access, ExportForm, export_jsonl};
use hermes_compaction::{Compressor, Persistence};

use crate::cli::{DemoArgs, ExportFormat, Mode, SessionCommand};
use crate::compact::{check, with_note};
use crate::input::{Input, Strictness};
use crate::setup::{build_summarizer, load_config};
use crate::simulate::simulate;
use crate::{Result, runtime, with_store, write_out};
use compaction_sim::Policy;
use compaction_sim::render::table;

/// Runs a `session` subcommand.
pub fn run(cmd: SessionCommand, out: &mut dyn std::io::Write) -> Result<()> {
    let rt = runtime()?;
    match cmd {
        SessionCommand::Import {
            file,
            format,
            db,
            session,
        } => {
            let input = Input::read_format(&file, format, Strictness::COMPACTION)?;
            let id = match session {
                Some(id) => id,
                None => default_session_id(&file)?,
            };
            let line = rt.block_on(import(&db, &id, input))?;
            write_out(out, &line)
        }
        SessionCommand::Export {
            db,
            session,
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
            let text = rt.block_on(with_store(&db, Access::Read, async |store| {
                Ok(export_jsonl(&*store, &session, form).await?)
            }))?;
            write_out(out, &text)
        }
        SessionCommand::Compact {
            db,
            session,
            mode,
            passes,
            engine,
        } => {
            let mode = mode.one_shot(passes)?;
            let config = crate::setup::load_config_with_profile(
                engine.config.as_deref(),
                engine.context_length,
                engine.profile.as_deref(),
            )?;
            let summarizer = build_summarizer(&config, engine.summarizer)?;
            let line = rt.block_on(with_store(&db, Access::Existing, async |store| {
                // One persistence for the session: the compressor commits every pass and
                // advances the generation it names.
                let (persistence, messages) = Persistence::load(store, &session).await?;
                let generation = persistence.generation;
                let mut c = Compressor::builder(config)
                    .summarizer(summarizer)
                    .counter(Arc::new(Estimator::default()))
                    .session(session.as_str())
                    .store(persistence)
                    .one_shot(mode)
                    .build()
                    .map_err(|e| crate::Error::Config(e.to_string()))?;
                let mut t = c.transcript(messages);
                let report = c.one_shot(&mut t).await;
                // The generation the committed passes reached, as the compressor counted
                // them: no store read that could fail after the commits and hide them.
                let after = c.store_generation().unwrap_or(generation);
                check(
                    &report,
                    &format!(
                        "the store holds what the earlier passes committed (generation {generation}->{after})"
                    ),
                )?;
                let line = format!(
                    "session={session} {report} generation={generation}->{after}"
                );
                Ok(with_note(&report, line))
            }))?;
            write_out(out, &line)
        }
        SessionCommand::History { db, session } => {
            write_out(out, &rt.block_on(crate::history::history(&db, &session))?)
        }
        SessionCommand::Undo { db, session, to } => {
            write_out(out, &rt.block_on(crate::history::undo(&db, &session, to))?)
        }
        SessionCommand::Diff {
            db,
            session,
            generation,
        } => write_out(
            out,
            &rt.block_on(crate::history::diff(&db, &session, generation))?,
        ),
        SessionCommand::Pin {
            db,
            session,
            index,
            unpin,
        } => write_out(
            out,
            &rt.block_on(crate::history::pin(&db, &session, index, !unpin))?,
        ),
    }
}

/// Stores `input` as the new session `id`; returns the one-line result.
pub async fn import(db: &str, id: &str, input: Input) -> Result<String> {
    with_store(db, Access::Create, async |store| {
        let mut messages = input.messages;
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
    let path = Path::new("examples/sessions/coding-agent.jsonl");
    let text = compaction_sim::example::session_jsonl();
    let input = Input::from_bytes(path, text.as_bytes(), Strictness::COMPACTION)?;
    let session = format!(
        "demo-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    );
    let config = load_config(None, Some(args.context_length))?;
    let rt = runtime()?;
    let messages = input.messages.clone();
    let mut text = String::new();
    text.push_str(&rt.block_on(import(&db, &session, input))?);
    text.push_str(&format!(" (SQLite store {db})\n"));
    write_out(out, &text)?;
    // One batch pass, committed with archive_and_compact.
    let mut sub = Vec::new();
    run(
        SessionCommand::Compact {
            db: db.clone(),
            session: session.clone(),
            mode: Mode::Batch,
            passes: None,
            engine: crate::cli::EngineArgs {
                context_length: Some(args.context_length),
                config: None,
                summarizer: None,
                profile: None,
            },
        },
        &mut sub,
    )?;
    write_out(out, &String::from_utf8_lossy(&sub))?;
    let inputs = vec![("coding-agent.jsonl".to_owned(), messages)];
    let policies = [
        Policy::None,
        Policy::Batch,
        Policy::BatchNaive,
        Policy::Micro,
    ];
    let options = crate::simulate::Options {
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        ..Default::default()
    };
    let sim = simulate(&inputs, &policies, &config, &options)?;
    let rows: Vec<_> = sim.totals.iter().collect();
    write_out(
        out,
        &format!(
            "\nreplay of the example session:\n{}",
            table("coding-agent.jsonl", &rows)
        ),
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
