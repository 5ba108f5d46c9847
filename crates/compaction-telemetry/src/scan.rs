//! Streaming log reader: bounded lines in, lenient telemetry records out.
//!
//! Memory is bounded by [`MAX_LINE_BYTES`] plus the reader's buffer, whatever the input size.
//! A line may be plain text with a telemetry prefix anywhere in it (Hermes Agent and the
//! human formatter put a timestamp, level and target before it), or a JSON object written by
//! the tracing JSON formatter whose `fields.message` (or top-level `message`) holds the line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::event::{BatchAttempt, MicroPass, TelemetryEvent, Trim, Turn};

/// Longest line the reader accepts; longer lines are skipped and counted as overlong.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Counts of what the reader saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct InputStats {
    /// Inputs (files or readers) read.
    pub inputs: u64,
    /// Lines read, telemetry or not.
    pub lines: u64,
    /// Telemetry lines understood.
    pub events: u64,
    /// Lines with a telemetry prefix but no readable JSON object (cut, garbled).
    pub malformed_lines: u64,
    /// Lines that are not valid UTF-8.
    pub non_utf8_lines: u64,
    /// Lines longer than [`MAX_LINE_BYTES`](crate::MAX_LINE_BYTES).
    pub overlong_lines: u64,
    /// Compressed inputs that ended early or were corrupt (read up to the damage).
    pub truncated_inputs: u64,
}

impl InputStats {
    /// Lines skipped for any reason.
    pub fn skipped_lines(&self) -> u64 {
        self.malformed_lines + self.non_utf8_lines + self.overlong_lines
    }
}

/// One telemetry record, with only what the report and the charts need. Every field is
/// optional because Hermes Agent lines and older lines carry fewer keys.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Record {
    Micro(MicroRec),
    Batch(BatchRec),
    Turn(TurnRec),
    Trim(TrimRec),
}

impl Record {
    /// The session id the record belongs to (`""` when the line had none).
    pub fn session(&self) -> &str {
        match self {
            Record::Micro(r) => &r.session,
            Record::Batch(r) => &r.session,
            Record::Turn(r) => &r.session,
            Record::Trim(r) => &r.session,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct MicroRec {
    pub session: String,
    pub outcome: String,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub tokens_delta: Option<i64>,
    pub exchange_tokens: Option<u64>,
    pub duration_ms: Option<u64>,
    pub occupancy_pct: Option<f64>,
    pub earliest_changed_index: Option<u64>,
    pub summary_tokens: Option<u64>,
}

impl MicroRec {
    /// Tokens the pass removed (negative when it grew the transcript).
    pub fn reclaimed(&self) -> Option<i64> {
        match (self.tokens_delta, self.tokens_before, self.tokens_after) {
            (Some(d), _, _) => Some(d.saturating_neg()),
            (None, Some(b), Some(a)) => Some(signed(b) - signed(a)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct BatchRec {
    pub session: String,
    pub outcome: String,
    pub failure_class: Option<String>,
    pub fallback_used: bool,
    pub tokens_before: Option<u64>,
    pub tokens_after: Option<u64>,
    pub duration_ms: Option<u64>,
    pub occupancy_pct: Option<f64>,
    pub earliest_changed_index: Option<u64>,
    pub summary_tokens: Option<u64>,
    pub summarize_ms: Option<u64>,
}

impl BatchRec {
    /// Whether the transcript was rewritten.
    pub fn committed(&self) -> bool {
        matches!(self.outcome.as_str(), "compacted" | "prune_only")
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct TurnRec {
    pub session: String,
    pub turn: Option<u64>,
    pub prompt_tokens: Option<u64>,
    pub occupancy_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct TrimRec {
    pub session: String,
    pub outcome: String,
    pub source: Option<String>,
    pub original_tokens: Option<u64>,
    pub trimmed_tokens: Option<u64>,
    pub tokens_saved: Option<u64>,
}

impl TrimRec {
    /// Tokens the trim kept out of the transcript: `tokens_saved`, else the difference of the
    /// two counts; 0 for a message that was kept whole, whatever the line says.
    pub fn saved(&self) -> u64 {
        if self.outcome != "trimmed" {
            return 0;
        }
        match (self.tokens_saved, self.original_tokens, self.trimmed_tokens) {
            (Some(s), _, _) => s,
            (None, Some(o), Some(t)) => o.saturating_sub(t),
            _ => 0,
        }
    }
}

/// What one line turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Parsed {
    Record(Record),
    /// No telemetry prefix: an ordinary log line.
    Unrelated,
    /// A telemetry prefix without a readable JSON object after it (cut, garbled).
    Malformed,
}

/// Streams the file at `path` (plain or gzip).
pub(crate) fn scan_path(
    path: &Path,
    stats: &mut InputStats,
    sink: &mut dyn FnMut(Record),
) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    if scan_input(file, stats, sink).map_err(io)? {
        Ok(())
    } else {
        Err(Error::GzipDisabled {
            path: path.to_owned(),
        })
    }
}

/// Streams one reader (plain or gzip); errors name it by its position among the inputs.
pub(crate) fn scan_reader(
    reader: impl Read,
    stats: &mut InputStats,
    sink: &mut dyn FnMut(Record),
) -> Result<()> {
    let index = stats.inputs as usize;
    let read = |source| Error::Read { index, source };
    if scan_input(reader, stats, sink).map_err(read)? {
        Ok(())
    } else {
        Err(read(io::Error::new(
            io::ErrorKind::InvalidData,
            "gzip input needs the `gzip` feature",
        )))
    }
}

/// Reads every line of `input`, feeding records to `sink` and counts to `stats`.
///
/// Input that starts with the gzip magic is decompressed when the `gzip` feature is on;
/// `Ok(false)` means it is gzip and the feature is off. A decompression error (a cut or
/// corrupt archive) ends this input and counts it in `stats.truncated_inputs`; other I/O
/// errors are returned.
fn scan_input(
    input: impl Read,
    stats: &mut InputStats,
    sink: &mut dyn FnMut(Record),
) -> io::Result<bool> {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let is_gzip = reader.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    stats.inputs += 1;
    if !is_gzip {
        scan_lines(reader, stats, sink)?;
        return Ok(true);
    }
    #[cfg(feature = "gzip")]
    {
        let decoder =
            BufReader::with_capacity(64 * 1024, flate2::read::MultiGzDecoder::new(reader));
        match scan_lines(decoder, stats, sink) {
            Ok(()) => Ok(true),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::UnexpectedEof
                        | io::ErrorKind::InvalidData
                        | io::ErrorKind::InvalidInput
                ) =>
            {
                stats.truncated_inputs += 1;
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }
    #[cfg(not(feature = "gzip"))]
    {
        stats.inputs -= 1;
        Ok(false)
    }
}

/// Parses one line (without its newline).
pub(crate) fn parse_line(line: &str) -> Parsed {
    // Every prefix ends with this; a cheap filter before anything else.
    if !line.contains("telemetry: ") {
        return Parsed::Unrelated;
    }
    // A tracing JSON-formatter line carries the telemetry line as its message. One that does
    // not parse (cut) falls through: its prefix is found but the escaped JSON after it is not
    // readable, so it counts as malformed.
    if line.trim_start().starts_with('{')
        && let Some(message) = json_formatter_message(line.trim_start())
    {
        return parse_text(&message);
    }
    parse_text(line)
}

fn scan_lines(
    mut reader: impl BufRead,
    stats: &mut InputStats,
    sink: &mut dyn FnMut(Record),
) -> io::Result<()> {
    let mut buf = Vec::with_capacity(4096);
    loop {
        match read_capped_line(&mut reader, &mut buf)? {
            LineRead::End => return Ok(()),
            LineRead::Overlong => {
                stats.lines += 1;
                stats.overlong_lines += 1;
            }
            LineRead::Line => {
                stats.lines += 1;
                let Ok(line) = std::str::from_utf8(&buf) else {
                    stats.non_utf8_lines += 1;
                    continue;
                };
                match parse_line(line) {
                    Parsed::Record(r) => {
                        stats.events += 1;
                        sink(r);
                    }
                    Parsed::Unrelated => {}
                    Parsed::Malformed => stats.malformed_lines += 1,
                }
            }
        }
        // Do not let one long line keep a large buffer alive.
        if buf.capacity() > 64 * 1024 {
            buf = Vec::with_capacity(4096);
        }
    }
}

enum LineRead {
    End,
    /// `buf` holds the line without its `\n` / `\r\n`.
    Line,
    /// The line was longer than [`MAX_LINE_BYTES`]; it has been consumed and dropped.
    Overlong,
}

fn read_capped_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<LineRead> {
    buf.clear();
    let n = reader
        .by_ref()
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(LineRead::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        return Ok(LineRead::Line);
    }
    if buf.len() <= MAX_LINE_BYTES {
        return Ok(LineRead::Line); // last line without a newline
    }
    // Too long: drop the rest of the line in bounded chunks.
    loop {
        buf.clear();
        let n = reader
            .by_ref()
            .take(MAX_LINE_BYTES as u64)
            .read_until(b'\n', buf)?;
        if n == 0 || buf.last() == Some(&b'\n') {
            break;
        }
    }
    buf.clear();
    Ok(LineRead::Overlong)
}

/// The message of a tracing JSON-formatter line, if `line` is one.
fn json_formatter_message(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    let message = value
        .get("fields")
        .and_then(|f| f.get("message"))
        .or_else(|| value.get("message"))?;
    message.as_str().map(str::to_owned)
}

fn parse_text(text: &str) -> Parsed {
    for (kind, prefix) in [
        (Kind::Micro, MicroPass::PREFIX),
        (Kind::Batch, BatchAttempt::PREFIX),
        (Kind::Turn, Turn::PREFIX),
        (Kind::Trim, Trim::PREFIX),
    ] {
        let Some(at) = text.find(prefix) else {
            continue;
        };
        let rest = &text[at + prefix.len()..];
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        return match values.next() {
            Some(Ok(Value::Object(obj))) => Parsed::Record(kind.record(&obj)),
            _ => Parsed::Malformed,
        };
    }
    Parsed::Unrelated
}

#[derive(Clone, Copy)]
enum Kind {
    Micro,
    Batch,
    Turn,
    Trim,
}

impl Kind {
    fn record(self, o: &Map<String, Value>) -> Record {
        let session = string(o, &["session_id"]).unwrap_or_default();
        match self {
            Kind::Micro => Record::Micro(MicroRec {
                session,
                outcome: string(o, &["outcome"]).unwrap_or_else(|| "unknown".into()),
                tokens_before: unsigned(o, &["tokens_before"]),
                tokens_after: unsigned(o, &["tokens_after"]),
                tokens_delta: signed_field(o, &["tokens_delta"]),
                exchange_tokens: unsigned(o, &["exchange_tokens"]),
                duration_ms: unsigned(o, &["duration_ms"]),
                occupancy_pct: percent(o),
                earliest_changed_index: unsigned(o, &["earliest_changed_index"]),
                summary_tokens: unsigned(o, &["summary_tokens"]),
            }),
            Kind::Batch => Record::Batch(BatchRec {
                session,
                outcome: batch_outcome(o),
                failure_class: string(o, &["failure_class"]),
                fallback_used: o
                    .get("fallback_used")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                // Hermes Agent names in the second place.
                tokens_before: unsigned(o, &["tokens_before", "current_estimated_tokens"]),
                tokens_after: unsigned(o, &["tokens_after", "result_estimated_tokens"]),
                duration_ms: unsigned(o, &["total_duration_ms", "duration_ms"]),
                occupancy_pct: percent(o),
                earliest_changed_index: unsigned(o, &["earliest_changed_index"]),
                summary_tokens: unsigned(o, &["summary_tokens", "aux_prompt_tokens"]),
                summarize_ms: unsigned(o, &["summarize_ms", "summary_generation_ms"]),
            }),
            Kind::Turn => Record::Turn(TurnRec {
                session,
                turn: unsigned(o, &["turn"]),
                prompt_tokens: unsigned(o, &["prompt_tokens"]),
                occupancy_pct: percent(o),
            }),
            Kind::Trim => Record::Trim(TrimRec {
                session,
                outcome: string(o, &["outcome"]).unwrap_or_else(|| "unknown".into()),
                source: string(o, &["source"]),
                original_tokens: unsigned(o, &["original_tokens"]),
                trimmed_tokens: unsigned(o, &["trimmed_tokens"]),
                tokens_saved: unsigned(o, &["tokens_saved"]),
            }),
        }
    }
}

/// Our `outcome`, else Hermes Agent's `commit_status` mapped onto it.
fn batch_outcome(o: &Map<String, Value>) -> String {
    if let Some(outcome) = string(o, &["outcome"]) {
        return outcome;
    }
    match o.get("commit_status").and_then(Value::as_str) {
        Some("committed") => "compacted".into(),
        Some("aborted") | Some("failed") => "failed".into(),
        Some(_) => "skipped".into(),
        None => "unknown".into(),
    }
}

fn first<'a>(o: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| o.get(*k).filter(|v| !v.is_null()))
}

fn string(o: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    first(o, keys).and_then(Value::as_str).map(str::to_owned)
}

fn unsigned(o: &Map<String, Value>, keys: &[&str]) -> Option<u64> {
    let v = first(o, keys)?;
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0 && *f < u64::MAX as f64)
            .map(|f| f.round() as u64)
    })
}

fn signed_field(o: &Map<String, Value>, keys: &[&str]) -> Option<i64> {
    let v = first(o, keys)?;
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && f.abs() < i64::MAX as f64)
            .map(|f| f.round() as i64)
    })
}

/// `occupancy_pct`, ignoring the negative sentinels some ports write for "unknown".
fn percent(o: &Map<String, Value>) -> Option<f64> {
    first(o, &["occupancy_pct"])
        .and_then(Value::as_f64)
        .filter(|f| f.is_finite() && *f >= 0.0)
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(input: &[u8]) -> (Vec<String>, u64) {
        let mut reader = io::Cursor::new(input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        let mut overlong = 0;
        loop {
            match read_capped_line(&mut reader, &mut buf).unwrap() {
                LineRead::End => return (out, overlong),
                LineRead::Line => out.push(String::from_utf8(buf.clone()).unwrap()),
                LineRead::Overlong => overlong += 1,
            }
        }
    }

    #[test]
    fn capped_reader_splits_lines_and_drops_overlong_ones() {
        let mut input = b"a\r\nb\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES * 2 + 5));
        input.extend(b"\nc");
        assert_eq!(
            lines_of(&input),
            (vec!["a".into(), "b".into(), "c".into()], 1)
        );

        let mut exact = vec![b'y'; MAX_LINE_BYTES];
        exact.push(b'\n');
        let (lines, overlong) = lines_of(&exact);
        assert_eq!((lines[0].len(), overlong), (MAX_LINE_BYTES, 0));
    }

    #[test]
    fn hermes_batch_keys_map_onto_ours() {
        let line = r#"INFO agent.conversation_compression: context compression attempt telemetry: {"commit_status":"committed","current_estimated_tokens":231200,"event":"compression_attempt","result_estimated_tokens":18432,"session_id":"s","total_duration_ms":13447}"#;
        let Parsed::Record(Record::Batch(b)) = parse_line(line) else {
            panic!("not a batch record: {:?}", parse_line(line));
        };
        assert_eq!(b.outcome, "compacted");
        assert_eq!(
            (b.tokens_before, b.tokens_after),
            (Some(231200), Some(18432))
        );
        assert_eq!(b.duration_ms, Some(13447));
    }

    #[test]
    fn json_formatter_lines_with_fields_or_flattened_message() {
        let nested = r#"{"timestamp":"t","fields":{"message":"compaction turn telemetry: {\"session_id\":\"s\",\"turn\":4}"}}"#;
        let flat = r#"{"timestamp":"t","message":"compaction turn telemetry: {\"session_id\":\"s\",\"turn\":4}"}"#;
        for line in [nested, flat] {
            let Parsed::Record(Record::Turn(t)) = parse_line(line) else {
                panic!("not a turn: {:?}", parse_line(line));
            };
            assert_eq!((t.session.as_str(), t.turn), ("s", Some(4)));
        }
        let other = r#"{"fields":{"message":"failed to emit compression attempt telemetry: x"}}"#;
        assert_eq!(parse_line(other), Parsed::Unrelated);
    }

    #[test]
    fn trim_lines_in_text_and_json_formatter_forms() {
        let text = r#"INFO hermes_compaction::telemetry: insert trim telemetry: {"event":"insert_trim","original_tokens":900,"outcome":"trimmed","session_id":"s","source":"tool_result","tokens_saved":800,"trimmed_tokens":100}"#;
        let json = r#"{"fields":{"message":"insert trim telemetry: {\"outcome\":\"trimmed\",\"session_id\":\"s\",\"original_tokens\":900,\"trimmed_tokens\":100}"}}"#;
        for line in [text, json] {
            let Parsed::Record(Record::Trim(t)) = parse_line(line) else {
                panic!("not a trim: {:?}", parse_line(line));
            };
            assert_eq!((t.session.as_str(), t.outcome.as_str()), ("s", "trimmed"));
            assert_eq!(t.saved(), 800, "{line}");
        }
        let kept = "insert trim telemetry: {\"outcome\":\"kept_no_store\",\"tokens_saved\":5}";
        let Parsed::Record(Record::Trim(k)) = parse_line(kept) else {
            panic!("not a trim: {:?}", parse_line(kept));
        };
        assert_eq!((k.session.as_str(), k.saved()), ("", 0));
        assert_eq!(
            parse_line("insert trim telemetry: {\"outcome\":\"trim"),
            Parsed::Malformed
        );
    }

    #[test]
    fn unrelated_and_malformed_lines() {
        assert_eq!(parse_line("INFO something else"), Parsed::Unrelated);
        assert_eq!(
            parse_line("failed to emit compression attempt telemetry: boom"),
            Parsed::Unrelated
        );
        assert_eq!(
            parse_line("micro compaction telemetry: {\"outcome\":"),
            Parsed::Malformed
        );
        assert_eq!(
            parse_line("micro compaction telemetry: [1,2]"),
            Parsed::Malformed
        );
        assert_eq!(
            parse_line(r#"{"fields":{"message":"micro compaction telemetry: {\"outc"#),
            Parsed::Malformed
        );
    }
}
