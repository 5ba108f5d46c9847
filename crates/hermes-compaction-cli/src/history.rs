//! `session history | undo | diff | pin`: see, undo and pin over the store. Thin over
//! [`TranscriptStore::history`](hermes_compaction::store::TranscriptStore::history),
//! [`restore`](hermes_compaction::store::TranscriptStore::restore) and
//! [`set_pinned`](hermes_compaction::store::TranscriptStore::set_pinned); everything printed
//! from messages is redacted.

use hermes_compaction::core::Role;
use hermes_compaction::core::redact::redact;
use hermes_compaction::store::{GenerationInfo, StoredRow};

use crate::session::{Open, with_store};
use crate::{Error, Result};

/// `session history`: one line per generation.
pub async fn history(db: &str, session: &str) -> Result<String> {
    with_store(db, Open::Existing, async |store| {
        let generations = store.history(session).await?;
        let mut out = format!(
            "{:>4}  {:<20}  {:<12}  {:>17}  {:>8}  {:>8}  {}\n",
            "gen", "time (UTC)", "pass", "tokens", "archived", "inserted", "restorable"
        );
        for g in &generations {
            out.push_str(&history_line(g));
            out.push('\n');
        }
        Ok(out)
    })
    .await
}

fn history_line(g: &GenerationInfo) -> String {
    let tokens = match (g.label.tokens_before, g.label.tokens_after) {
        (Some(b), Some(a)) => format!("{b}->{a}"),
        _ => "-".to_owned(),
    };
    let kind = match g.restored_to {
        Some(to) => format!("{} to {to}", g.label.kind),
        None => g.label.kind.to_string(),
    };
    format!(
        "{:>4}  {:<20}  {:<12}  {:>17}  {:>8}  {:>8}  {}",
        g.generation,
        g.created_at_ms.map_or("-".to_owned(), utc),
        kind,
        tokens,
        g.archived,
        g.inserted,
        if g.restorable { "yes" } else { "no" }
    )
}

/// `session undo [--to N]`: restores generation N (default: the one before the current).
pub async fn undo(db: &str, session: &str, to: Option<u64>) -> Result<String> {
    with_store(db, Open::Existing, async |store| {
        let current = store.generation(session).await?;
        let target = match to {
            Some(n) => n,
            None if current == 0 => {
                return Err(Error::Config(format!(
                    "session {session} is at generation 0: nothing to undo"
                )));
            }
            None => current - 1,
        };
        let done = store.restore(session, current, target).await?;
        Ok(format!(
            "session={session} restored generation {target}: generation={current}->{} archived={} reactivated={}",
            done.generation, done.archived, done.reactivated
        ))
    })
    .await
}

/// `session pin --index I [--unpin]`.
pub async fn pin(db: &str, session: &str, index: usize, pinned: bool) -> Result<String> {
    with_store(db, Open::Existing, async |store| {
        let (messages, generation) = store.load_active_with_generation(session).await?;
        let Some(m) = messages.get(index) else {
            return Err(Error::Config(format!(
                "--index {index} is out of range: session {session} has {} active messages",
                messages.len()
            )));
        };
        let row = m
            .row_id()
            .ok_or_else(|| Error::Pass(format!("message {index} has no row id")))?;
        let (new_row, after) = store.set_pinned(session, generation, row, pinned).await?;
        Ok(format!(
            "session={session} message {index} {}: row={row}->{new_row} generation={generation}->{after}",
            if pinned { "pinned" } else { "unpinned" }
        ))
    })
    .await
}

/// `session diff --generation N`: what N archived, and what replaced it.
pub async fn diff(db: &str, session: &str, generation: u64) -> Result<String> {
    with_store(db, Open::Existing, async |store| {
        let generations = store.history(session).await?;
        let current = generations.len() as u64 - 1;
        if generation == 0 || generation > current {
            return Err(Error::Config(format!(
                "--generation {generation}: session {session} has generations 1 to {current}"
            )));
        }
        let info = &generations[generation as usize];
        let rows = store.load_all(session).await?;
        let archived: Vec<&StoredRow> = rows
            .iter()
            .filter(|r| r.archived_generation == Some(generation))
            .collect();
        let inserted: Vec<&StoredRow> = rows
            .iter()
            .filter(|r| r.pass_generation == Some(generation))
            .collect();
        if archived.is_empty() && inserted.is_empty() && (info.archived > 0 || info.inserted > 0) {
            return Err(Error::Config(format!(
                "--generation {generation} was written before the store recorded what each generation archived"
            )));
        }
        let mut out = format!("{}\n", history_line(info));
        out.push_str(&format!(
            "--- archived by generation {generation} ({})\n",
            archived.len()
        ));
        for r in &archived {
            out.push_str(&row_text('-', r));
        }
        out.push_str(&format!(
            "+++ written by generation {generation} ({})\n",
            inserted.len()
        ));
        for r in &inserted {
            out.push_str(&row_text('+', r));
        }
        Ok(out)
    })
    .await
}

/// One row of a diff: a header line (row id, role, tool, marker kind, pin) and its text,
/// redacted, each line prefixed with `sign`.
fn row_text(sign: char, r: &StoredRow) -> String {
    let m = &r.message;
    let mut head = format!("{sign} row {} {}", r.id, role_name(m.role()));
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
    if let Some(k) = r.kind {
        head.push_str(&format!(" [{} marker]", k.as_str()));
    }
    if m.is_pinned() {
        head.push_str(" [pinned]");
    }
    let mut out = format!("{head}\n");
    for line in redact(&m.text()).lines() {
        out.push(sign);
        out.push_str("   ");
        out.push_str(line);
        out.push('\n');
    }
    out
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
    use hermes_compaction::core::Message;

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
        let text = row_text('-', &row);
        assert!(text.starts_with("- row 7 user\n"), "{text}");
        assert!(!text.contains("abcdefghijklmnop"), "{text}");
    }
}
