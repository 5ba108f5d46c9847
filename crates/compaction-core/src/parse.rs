//! Reading and writing transcripts: JSONL (one message per line) and JSON arrays.
//!
//! Parsing never panics on any input. Errors say where (1-based line, or 0-based array
//! index) and why, and never quote message text.

use serde_json::value::RawValue;

use crate::error::Location;
use crate::error::{Error, Result};
use crate::message::Message;

fn at(location: Location, reason: Error) -> Error {
    Error::Parse {
        location,
        reason: Box::new(reason),
    }
}

/// The format of a transcript on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// One JSON array of objects.
    JsonArray,
}

/// Parses a transcript, detecting JSONL or a JSON array from the first non-blank byte.
///
/// ```
/// use compaction_core::Location;
/// use compaction_core::parse::{self, Format};
///
/// let jsonl = b"{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"assistant\",\"content\":\"hello\"}\n";
/// let (msgs, format) = parse::parse_transcript(jsonl).unwrap();
/// assert_eq!((msgs.len(), format), (2, Format::Jsonl));
/// assert_eq!(parse::to_jsonl(&msgs).as_bytes(), jsonl);
///
/// let array = br#"[{"role":"user","content":"hi"}]"#;
/// assert_eq!(parse::parse_transcript(array).unwrap().1, Format::JsonArray);
///
/// // Errors say where, never what the message said.
/// let err = parse::parse_transcript(b"{\"role\":\"user\"}\n{\"content\":\"secret\"}\n").unwrap_err();
/// assert_eq!(err.location(), Some(Location::Line(2)));
/// assert!(!err.to_string().contains("secret"));
/// ```
pub fn parse_transcript(bytes: &[u8]) -> Result<(Vec<Message>, Format)> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let line = bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
        at(Location::Line(line), Error::NotUtf8 { offset })
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match text.trim_start().as_bytes().first() {
        Some(b'[') => parse_json_array(text).map(|m| (m, Format::JsonArray)),
        _ => parse_jsonl(text).map(|m| (m, Format::Jsonl)),
    }
}

/// Parses JSONL: one message per line; blank lines (and a trailing `\r`) are allowed.
pub fn parse_jsonl(text: &str) -> Result<Vec<Message>> {
    let mut out = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let msg = Message::from_json(line).map_err(|e| at(Location::Line(i + 1), e))?;
        out.push(msg);
    }
    Ok(out)
}

/// Parses a JSON array of messages.
pub fn parse_json_array(text: &str) -> Result<Vec<Message>> {
    let items: Vec<Box<RawValue>> = serde_json::from_str(text).map_err(|e| {
        let reason = match Message::from_json(text) {
            Err(Error::NotAnObject { .. }) | Ok(_) => Error::NotATranscript,
            Err(other) => other,
        };
        at(Location::Line(e.line().max(1)), reason)
    })?;
    items
        .iter()
        .enumerate()
        .map(|(i, raw)| Message::from_json(raw.get()).map_err(|e| at(Location::Index(i), e)))
        .collect()
}

/// Writes messages as JSONL (with library metadata), one line each, `\n`-terminated.
pub fn to_jsonl(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str(&m.to_json());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_with_blank_lines_and_crlf() {
        let text = "{\"role\":\"user\",\"content\":\"a\"}\r\n\n  \n{\"role\":\"assistant\",\"content\":\"b\"}";
        let msgs = parse_jsonl(text).unwrap();
        assert_eq!(msgs.len(), 2);
        assert_eq!(
            to_jsonl(&msgs),
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"assistant\",\"content\":\"b\"}\n"
        );
    }

    #[test]
    fn errors_carry_line_and_index() {
        let err = parse_jsonl("{\"role\":\"user\"}\n\n{\"content\":\"x\"}").unwrap_err();
        assert_eq!(err.location().unwrap(), Location::Line(3));
        assert_eq!(err.to_string(), "line 3: message has no `role`");
        let (_, fmt) = parse_transcript(b"[{\"role\":\"user\"}]").unwrap();
        assert_eq!(fmt, Format::JsonArray);
        let err = parse_transcript(b" [{\"role\":\"user\"}, {\"x\":1}]").unwrap_err();
        assert_eq!(err.location().unwrap(), Location::Index(1));
        let err = parse_transcript(b"{\"role\":\"user\"}\n\xff\xfe").unwrap_err();
        assert_eq!(err.location().unwrap(), Location::Line(2));
        let err = parse_transcript(b"[1, 2").unwrap_err();
        assert_eq!(err.location().unwrap(), Location::Line(1));
    }

    /// A byte-order mark is not a line: the lines after it keep their numbers, whether the
    /// first line is blank, the file is an array, or the bad bytes are not UTF-8.
    #[test]
    fn a_byte_order_mark_does_not_shift_line_numbers() {
        let bom = "\u{feff}";
        for (text, line) in [
            (format!("{bom}\n{{\"role\":\"user\"}}\n{{\"x\":1}}\n"), 3),
            (format!("{bom}\r\n\r\n{{\"x\":1}}\r\n"), 3),
            (format!("{bom}{{\"x\":1}}\n"), 1),
            (format!("{bom}\n\n[{{\"role\":\"user\"}},\n{{\"x\":1"), 4),
        ] {
            let err = parse_transcript(text.as_bytes()).unwrap_err();
            assert_eq!(err.location(), Some(Location::Line(line)), "{text:?}");
        }
        let mut bytes = bom.as_bytes().to_vec();
        bytes.extend_from_slice(b"\n{\"role\":\"user\"}\n\xff\n");
        let err = parse_transcript(&bytes).unwrap_err();
        assert_eq!(err.location(), Some(Location::Line(3)));
        let err =
            parse_transcript(format!("{bom}\n[{{\"role\":\"user\"}}, {{\"x\":1}}]").as_bytes())
                .unwrap_err();
        assert_eq!(err.location(), Some(Location::Index(1)));
    }
}
