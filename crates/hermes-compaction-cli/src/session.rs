//! `session import | export | compact`, and `demo`: the store from the command line.

use std::path::Path;
use std::sync::Arc;

use hermes_compaction::core::{Estimator, parse};
use hermes_compaction::store::{Store, TranscriptStore};
use hermes_compaction::{Compressor, Persistence};

use crate::cli::{DemoArgs, Mode, SessionCommand};
use crate::compact::{check, summary_line};
use crate::input::{Input, Strictness};
use crate::setup::{build_summarizer, load_config};
use crate::simulate::{Policy, simulate, table};
use crate::{Result, runtime, write_out};

/// Runs a `session` subcommand.
pub fn run(cmd: SessionCommand, out: &mut dyn std::io::Write) -> Result<()> {
    let rt = runtime()?;
    match cmd {
        SessionCommand::Import { file, db, session } => {
            let input = Input::read(&file, Strictness::COMPACTION)?;
            let id = match session {
                Some(id) => id,
                None => default_session_id(&file)?,
            };
            let line = rt.block_on(import(&db, &id, input))?;
            write_out(out, &line)
        }
        SessionCommand::Export { db, session, all } => {
            let text = rt.block_on(export(&db, &session, all))?;
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
            let mut config = crate::setup::load_config_with_profile(
                engine.config.as_deref(),
                engine.context_length,
                engine.profile.as_deref(),
            )?;
            mode.configure(&mut config);
            let summarizer = build_summarizer(&config, engine.summarizer)?;
            let line = rt.block_on(async {
                let store = connect(&db).await?;
                // One persistence for the session: the compressor commits every pass and
                // advances the generation it names.
                let (persistence, messages) = Persistence::load(store.clone(), &session).await?;
                let generation = persistence.generation;
                let mut c = Compressor::new(
                    config,
                    summarizer,
                    Arc::new(Estimator::default()),
                    session.as_str(),
                )
                .with_store(persistence);
                let mut t = c.transcript(messages);
                let report = c.one_shot(&mut t, mode).await;
                let after = store.generation(&session).await?;
                check(
                    &report,
                    &format!(
                        "the store holds what the earlier passes committed (generation {generation}->{after})"
                    ),
                )?;
                Ok::<_, crate::Error>(format!(
                    "session={session} {} generation={generation}->{after}",
                    summary_line(&report)
                ))
            })?;
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

/// Connects to a store: a `sqlite:`/`postgres://` URL, or a plain path (a SQLite file,
/// created when missing).
pub async fn connect(db: &str) -> Result<Arc<dyn TranscriptStore>> {
    let url = if db.starts_with("sqlite:")
        || db.starts_with("postgres://")
        || db.starts_with("postgresql://")
    {
        db.to_owned()
    } else if let Some((scheme, _)) = db.split_once("://") {
        // Only the scheme is printed: the rest may hold credentials.
        return Err(crate::Error::Config(format!(
            "--db: unsupported store URL scheme `{}` (expected a SQLite path, sqlite:PATH or postgres://)",
            scheme.chars().take(16).collect::<String>()
        )));
    } else {
        format!("sqlite:{db}")
    };
    Ok(Store::connect(&url).await?.into_dyn())
}

/// Stores `input` as the new session `id`; returns the one-line result.
pub async fn import(db: &str, id: &str, input: Input) -> Result<String> {
    let store = connect(db).await?;
    let mut messages = input.messages;
    // One transaction: a failed import leaves no session behind.
    let ids = store.import_session(id, &mut messages).await?;
    Ok(format!("imported {} messages into session {id}", ids.len()))
}

/// The session as JSONL: the active messages, or with `all` every row with its flags in the
/// `_hermes` metadata.
pub async fn export(db: &str, id: &str, all: bool) -> Result<String> {
    let store = connect(db).await?;
    if !all {
        return Ok(parse::to_jsonl(&store.load_active(id).await?));
    }
    let rows = store.load_all(id).await?;
    let mut messages = Vec::with_capacity(rows.len());
    for row in rows {
        let mut m = row.message;
        let extra = &mut m.meta_mut().extra;
        extra.insert("active".into(), row.active.into());
        extra.insert("compacted".into(), row.compacted.into());
        extra.insert("generation".into(), row.generation.into());
        extra.insert("position".into(), row.position.into());
        messages.push(m);
    }
    Ok(parse::to_jsonl(&messages))
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
    let text = crate::example::session_jsonl();
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
