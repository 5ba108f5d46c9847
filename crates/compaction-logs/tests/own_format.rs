//! The recipe "Add an agent log format" (docs/ARCHITECTURE.md), followed once: a format
//! defined here (its reader and one row) joins the table with `Format::register`, and is then
//! named, detected, checked for mixtures and read through every front door of the crate, with
//! no other change.

use compaction_core::Message;
use compaction_logs::serde_json::{Map, Value};
use compaction_logs::{
    Error, Format, Log, LogReader, Options, Position, Reason, Strictness, TranscriptFile,
    TranscriptFormat, detect, parse_line,
};

/// "Acme agent" logs: one JSON object per line, `{"acme": 1, "who": "user"|"bot", "say": TEXT}`.
#[derive(Debug, Default)]
struct AcmeReader {
    log: Log,
}

impl LogReader for AcmeReader {
    fn push_line(&mut self, at: usize, line: &str) -> Result<(), Error> {
        let Some(obj) = parse_line(at, line)? else {
            return Ok(());
        };
        let field = |expected| Error {
            position: Position::Line(at),
            reason: Reason::Field {
                field: "say",
                expected,
            },
        };
        let say = obj
            .get("say")
            .and_then(Value::as_str)
            .ok_or_else(|| field("must be a string"))?;
        let message = match obj.get("who").and_then(Value::as_str) {
            Some("user") => Message::user(say),
            Some("bot") => Message::assistant(say),
            _ => return Err(field("must follow `who` = \"user\" or \"bot\"")),
        };
        self.log.messages.push(message);
        self.log.lines.push(at);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Log, Error> {
        Ok(self.log)
    }
}

fn is_acme_line(obj: &Map<String, Value>) -> bool {
    obj.get("acme").and_then(Value::as_u64) == Some(1)
}

fn acme_reader(_: Options) -> Box<dyn LogReader> {
    Box::<AcmeReader>::default()
}

/// The one row.
const ACME: Format = Format::lines("acme", "an Acme log line", is_acme_line, acme_reader);

const LOG: &str = "{\"acme\":1,\"who\":\"user\",\"say\":\"fix the build\"}\n\
                   \n\
                   {\"acme\":1,\"who\":\"bot\",\"say\":\"done\"}\n";

#[test]
fn a_format_defined_outside_the_crate_joins_the_table() {
    ACME.register().expect("a new name joins");
    ACME.register()
        .expect("registering it again changes nothing");
    assert_eq!(
        Format::CODEX.register(),
        Err("codex"),
        "a built-in name is taken"
    );
    assert_eq!(
        Format::lines("acme", "another", is_acme_line, acme_reader).register(),
        Err("acme"),
        "a name is one format's"
    );

    // Named: the table lists it, and the command line's names come from the table.
    assert_eq!(Format::from_name("acme"), Some(ACME));
    assert!(Format::all().contains(&ACME));
    assert_eq!(
        TranscriptFormat::from_name("acme"),
        Some(TranscriptFormat::Log(ACME))
    );
    assert!(TranscriptFormat::names().contains(&"acme"));

    // Detected from its first lines; the built-in formats still win theirs.
    assert_eq!(detect(LOG), Some(ACME));
    assert_eq!(
        detect("{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{}}\n"),
        Some(Format::CODEX)
    );

    // Read, by the streaming reader and through the front door for files.
    let log = compaction_logs::read(ACME, LOG, Options::default()).unwrap();
    assert_eq!(
        log.messages,
        [Message::user("fix the build"), Message::assistant("done")]
    );
    assert_eq!(log.lines, [1, 3]);
    let file = TranscriptFile::parse(
        "acme.jsonl".as_ref(),
        LOG.as_bytes(),
        TranscriptFormat::Auto,
        Strictness::COMPACTION,
    )
    .unwrap();
    assert_eq!(file.messages.len(), 2);

    // Its errors name the line, never the text.
    let bad = "{\"acme\":1,\"who\":\"user\",\"say\":\"x\"}\n{\"acme\":1,\"who\":\"cat\",\"say\":\"secret\"}\n";
    let err = compaction_logs::read(ACME, bad, Options::default()).unwrap_err();
    assert_eq!(err.position, Position::Line(2));
    assert!(!err.to_string().contains("secret"), "{err}");

    // A mixture with another format is refused at the first foreign line, named by its label.
    let mixed = format!("{LOG}{}\n", "{\"type\":\"session_meta\",\"payload\":{}}");
    let m = compaction_logs::check_single(&mixed, ACME).unwrap_err();
    assert_eq!((m.line, m.other), (4, Some(Format::CODEX)));
    let m = compaction_logs::check_single(&format!("{LOG}{LOG}"), Format::CODEX);
    assert!(m.is_ok(), "a file with no Codex line is left to the reader");
    let codex_then_acme = format!("{}\n{LOG}", "{\"type\":\"session_meta\",\"payload\":{}}");
    let m = compaction_logs::check_single(&codex_then_acme, Format::CODEX).unwrap_err();
    assert!(
        m.to_string()
            .starts_with("an Acme log line inside a codex log"),
        "{m}"
    );
}
