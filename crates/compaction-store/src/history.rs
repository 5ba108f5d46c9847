//! How a session's history prints: one line per generation ([`HistoryTable`]) and what one
//! generation archived and wrote ([`GenerationDiff`]). Everything printed from messages is
//! redacted.

use std::fmt;

use compaction_core::Role;
use compaction_redact::{redact, redact_adjacent};

use crate::{GenerationInfo, StoredRow};

/// [`TranscriptStore::history`](crate::TranscriptStore::history) as a table: a header, then
/// one line per generation (number, UTC time, what wrote it, tokens before and after, rows
/// archived and inserted, whether it can be restored).
///
/// ```
/// use compaction_store::HistoryTable;
/// assert_eq!(
///     HistoryTable(&[]).to_string(),
///     " gen  time (UTC)            pass                     tokens  archived  inserted  restorable\n",
/// );
/// ```
#[derive(Clone, Copy, Debug)]
pub struct HistoryTable<'a>(pub &'a [GenerationInfo]);

impl fmt::Display for HistoryTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:>4}  {:<20}  {:<12}  {:>17}  {:>8}  {:>8}  restorable",
            "gen", "time (UTC)", "pass", "tokens", "archived", "inserted"
        )?;
        for g in self.0 {
            writeln!(f, "{g}")?;
        }
        Ok(())
    }
}

/// One line of [`HistoryTable`] (no newline).
impl fmt::Display for GenerationInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tokens = match (self.label.tokens_before, self.label.tokens_after) {
            (Some(b), Some(a)) => format!("{b}->{a}"),
            _ => "-".to_owned(),
        };
        let kind = match self.restored_to {
            Some(to) => format!("{} to {to}", self.label.kind),
            None => self.label.kind.to_string(),
        };
        write!(
            f,
            "{:>4}  {:<20}  {:<12}  {:>17}  {:>8}  {:>8}  {}",
            self.generation,
            self.created_at_ms.map_or("-".to_owned(), utc),
            kind,
            tokens,
            self.archived,
            self.inserted,
            if self.restorable { "yes" } else { "no" }
        )
    }
}

/// What one generation archived, and what it wrote in their place, from the rows'
/// [`archived_generation`](StoredRow::archived_generation) and
/// [`pass_generation`](StoredRow::pass_generation). Prints as its history line, then the
/// archived rows (`-`) and the written rows (`+`), redacted.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GenerationDiff {
    /// The generation.
    pub info: GenerationInfo,
    /// The rows it archived.
    pub archived: Vec<StoredRow>,
    /// The rows it inserted.
    pub inserted: Vec<StoredRow>,
}

impl GenerationDiff {
    /// The diff of `info`'s generation among `rows` (all of the session's rows,
    /// [`TranscriptStore::load_all`](crate::TranscriptStore::load_all); the others are
    /// dropped). [`Session::diff`](crate::Session::diff) reads both and calls it.
    pub fn of(info: GenerationInfo, rows: Vec<StoredRow>) -> GenerationDiff {
        let generation = Some(info.generation);
        let (mut archived, mut inserted) = (Vec::new(), Vec::new());
        for r in rows {
            if r.archived_generation == generation {
                archived.push(r);
            } else if r.pass_generation == generation {
                inserted.push(r);
            }
        }
        GenerationDiff {
            info,
            archived,
            inserted,
        }
    }

    /// Whether the generation changed rows but the store did not record which (it was written
    /// before schema version 4): the diff would print nothing it did.
    pub fn unrecorded(&self) -> bool {
        self.archived.is_empty()
            && self.inserted.is_empty()
            && (self.info.archived > 0 || self.info.inserted > 0)
    }
}

impl fmt::Display for GenerationDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let generation = self.info.generation;
        writeln!(f, "{}", self.info)?;
        writeln!(
            f,
            "--- archived by generation {generation} ({})",
            self.archived.len()
        )?;
        // Neighbouring rows are redacted together, so a secret split across two of them
        // (the end of one tool output, the start of the next) is redacted in both.
        for (r, body) in self.archived.iter().zip(adjacent_texts(&self.archived)) {
            f.write_str(&r.diff_text_of('-', &body))?;
        }
        writeln!(
            f,
            "+++ written by generation {generation} ({})",
            self.inserted.len()
        )?;
        for (r, body) in self.inserted.iter().zip(adjacent_texts(&self.inserted)) {
            f.write_str(&r.diff_text_of('+', &body))?;
        }
        Ok(())
    }
}

impl StoredRow {
    /// The row as a diff prints it: a header line (row id, role, tool, marker kind, pin) and
    /// its text, redacted, each line prefixed with `sign`.
    ///
    /// ```
    /// use compaction_core::Message;
    /// use compaction_store::StoredRow;
    /// let row = StoredRow {
    ///     id: 7, position: 1, message: Message::user("key sk-abcdefghijklmnopqrstuvwxyz012345"),
    ///     kind: None, active: false, compacted: true, generation: 0, created_at_ms: 0,
    ///     archived_at_ms: Some(1), archived_generation: Some(1), pass_generation: None,
    /// };
    /// let text = row.diff_text('-');
    /// assert!(text.starts_with("- row 7 user\n-   key "));
    /// assert!(!text.contains("abcdefghijklmnop"));
    /// ```
    pub fn diff_text(&self, sign: char) -> String {
        let body = redact(&self.message.text()).into_owned();
        self.diff_text_of(sign, &body)
    }

    /// [`diff_text`](Self::diff_text) with `body` (the row's text, redacted) as its text.
    fn diff_text_of(&self, sign: char, body: &str) -> String {
        let m = &self.message;
        let mut head = format!("{sign} row {} {}", self.id, role_name(m.role()));
        if let Some(id) = m.tool_call_id() {
            head.push_str(&format!(" (result of {})", redact(id)));
        }
        for c in m.tool_calls() {
            head.push_str(&format!(
                " call {}({})",
                redact(&c.function.name),
                redact(&c.function.arguments)
            ));
        }
        if let Some(k) = self.kind {
            head.push_str(&format!(" [{} marker]", k.as_str()));
        }
        if m.is_pinned() {
            head.push_str(" [pinned]");
        }
        let mut out = format!("{head}\n");
        for line in body.lines() {
            out.push(sign);
            out.push_str("   ");
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// The texts of `rows`, redacted together ([`redact_adjacent`]).
fn adjacent_texts(rows: &[StoredRow]) -> Vec<String> {
    let texts: Vec<String> = rows.iter().map(|r| r.message.text().into_owned()).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    redact_adjacent(&refs)
        .into_iter()
        .map(std::borrow::Cow::into_owned)
        .collect()
}

fn role_name(role: &Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::Developer => "developer",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::Other(_) => "other",
    }
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM:SS` (UTC).
fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use compaction_core::Message;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_796_083_199_999), "2026-11-30 23:59:59");
        assert_eq!(utc(-1_000), "1969-12-31 23:59:59");
    }

    #[test]
    fn rows_print_redacted() {
        let m = Message::user("my key is sk-abcdefghijklmnopqrstuvwxyz012345 ok");
        let row = StoredRow {
            id: 7,
            position: 1,
            message: m,
            kind: None,
            active: false,
            compacted: true,
            generation: 0,
            created_at_ms: 0,
            archived_at_ms: Some(1),
            archived_generation: Some(1),
            pass_generation: None,
        };
        let text = row.diff_text('-');
        assert!(text.starts_with("- row 7 user\n"), "{text}");
        assert!(!text.contains("abcdefghijklmnop"), "{text}");
    }
}
