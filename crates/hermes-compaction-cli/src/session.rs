//! `session import | export | compact`, and `demo`: the store from the command line.

use std::path::Path;
use std::sync::Arc;

use hermes_compaction::core::{Estimator, parse};
use hermes_compaction::store::{Backend, DatabaseFailure, Store, StoreOptions, TranscriptStore};
use hermes_compaction::{Compressor, Persistence};

use crate::cli::{DemoArgs, ExportFormat, Mode, SessionCommand};
use crate::compact::{check, with_note};
use crate::input::{Input, Strictness};
use crate::setup::{build_summarizer, load_config};
use crate::simulate::simulate;
use crate::{Result, runtime, write_out};
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
                (ExportFormat::Anthropic, false, _) => Export::Anthropic,
                (ExportFormat::Openai, true, _) => Export::All,
                (ExportFormat::Openai, false, true) => Export::Wire,
                (ExportFormat::Openai, false, false) => Export::Stored,
            };
            let text = rt.block_on(export(&db, &session, form))?;
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
            let line = rt.block_on(with_store(&db, Open::Existing, async |store| {
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

/// Whether a command may create the database it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// `session import`: a missing SQLite file is created.
    Create,
    /// Every other command: a missing SQLite file is a usage error (exit 2) and nothing is
    /// created.
    Existing,
    /// A command that only reads (`session export`): as `Existing`, and a SQLite database the
    /// process may not write (a read-only mount or file, or a `sqlite:PATH?mode=ro` URL) is
    /// opened read-only, which works when its schema is current and otherwise says which
    /// migration it needs.
    Read,
}

/// Connects to a store: a URL with a scheme a store backend declares ([`Backend::for_url`]:
/// `sqlite:`, `postgres://`, `postgresql://`), or a plain path (a SQLite file).
pub async fn connect(db: &str, open: Open) -> Result<Store> {
    let url = if Backend::for_url(db).is_some() {
        db.to_owned()
    } else if let Some((scheme, _)) = db.split_once("://") {
        // Only the scheme is printed: the rest may hold credentials.
        let known: Vec<String> = Backend::ALL
            .iter()
            .flat_map(|b| b.schemes())
            .map(|s| format!("{s}:"))
            .collect();
        return Err(crate::Error::Config(format!(
            "--db: unsupported store URL scheme `{}` (expected a SQLite path or a URL starting {})",
            scheme.chars().take(16).collect::<String>(),
            known.join(", ")
        )));
    } else {
        sqlite_url(db)
    };
    if open != Open::Create
        && let Some(path) = sqlite_file(&url)
        && !Path::new(path).exists()
    {
        return Err(crate::Error::Config(format!(
            "--db: no database at {path} (`session import` creates one)"
        )));
    }
    let options = StoreOptions {
        create_if_missing: open == Open::Create,
        ..StoreOptions::default()
    };
    match Store::connect_with(&url, &options).await {
        // Opened for writing, the database refused (read-only file or mount, or a schema
        // migration it could not write): a read needs no write access.
        Err(hermes_compaction::store::StoreError::Database {
            failure: DatabaseFailure::ReadOnly | DatabaseFailure::CannotOpen,
            ..
        }) if open == Open::Read && sqlite_file(&url).is_some() => {
            let read_only = StoreOptions {
                read_only: true,
                ..options
            };
            Ok(Store::connect_with(&url, &read_only).await?)
        }
        other => Ok(other?),
    }
}

/// Runs `work` against the store at `db`, then closes the store whatever `work` returned: on
/// SQLite that checkpoints the write-ahead log, so the `.db` file alone holds the session.
pub async fn with_store<T>(
    db: &str,
    open: Open,
    work: impl AsyncFnOnce(Arc<dyn TranscriptStore>) -> Result<T>,
) -> Result<T> {
    let store = connect(db, open).await?;
    let result = work(store.clone().into_dyn()).await;
    store.close().await;
    result
}

/// The `sqlite:` URL of a plain path.
fn sqlite_url(path: &str) -> String {
    format!("{}:{path}", Backend::Sqlite.schemes()[0])
}

/// The file of a `sqlite:` URL (`None` for an in-memory database or another backend).
fn sqlite_file(url: &str) -> Option<&str> {
    if Backend::for_url(url) != Some(Backend::Sqlite) {
        return None;
    }
    let rest = url.split_once(':')?.1;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split_once('?').map_or(rest, |(p, _)| p);
    (!path.is_empty() && path != ":memory:" && !url.contains("mode=memory")).then_some(path)
}

/// Stores `input` as the new session `id`; returns the one-line result.
pub async fn import(db: &str, id: &str, input: Input) -> Result<String> {
    with_store(db, Open::Create, async |store| {
        let mut messages = input.messages;
        // One transaction: a failed import leaves no session behind.
        let ids = store.import_session(id, &mut messages).await?;
        Ok(format!("imported {} messages into session {id}", ids.len()))
    })
    .await
}

/// What `session export` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Export {
    /// The active messages as stored: each with its `_hermes` metadata (row id, marker kind,
    /// trim handle), which `session import` and `compact` read back.
    Stored,
    /// The active messages as a model is sent them: no `_hermes` metadata.
    Wire,
    /// The active messages as Anthropic Messages (tool results grouped into user turns as
    /// `tool_result` blocks, calls as `tool_use` blocks).
    Anthropic,
    /// Every row, archived ones included, each with `active`, `compacted`, `generation` and
    /// `position` added to its `_hermes` metadata.
    All,
}

/// The session as JSONL, in the form `form` names.
pub async fn export(db: &str, id: &str, form: Export) -> Result<String> {
    with_store(db, Open::Read, async |store| {
        match form {
            Export::Stored => return Ok(parse::to_jsonl(&store.load_active(id).await?)),
            Export::Wire => {
                let mut out = String::new();
                for m in store.load_active(id).await? {
                    out.push_str(&m.to_wire_json());
                    out.push('\n');
                }
                return Ok(out);
            }
            Export::Anthropic => {
                let messages = store.load_active(id).await?;
                return Ok(hermes_compaction::core::anthropic::to_jsonl(&messages));
            }
            Export::All => {}
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
