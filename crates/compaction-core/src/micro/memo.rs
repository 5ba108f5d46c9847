//! The plan memo: what earlier plans of a transcript that only grew found, so a plan resumes
//! their scans.

use std::ops::Range;

use crate::transcript::Transcript;

/// What earlier plans of the same transcript found, so that a plan of that transcript grown
/// only by appends resumes their scans instead of redoing them (the one-shot replay and an
/// agent loop plan once per turn). Plain data, kept by the
/// [`MicroPlanner`](super::MicroPlanner) next to its state; a fresh (default) memo is always correct. Each entry is
/// used only while the transcript's lineage, its length, the cursor and the middle's start
/// agree with what the scan saw, and the middle did not shrink; otherwise the scan starts
/// over.
#[derive(Clone, Debug, Default)]
pub(crate) struct PlanMemo {
    pub(super) gate: Option<GateScan>,
    pub(super) turn: Option<TurnScan>,
    no_progress: Option<Clear>,
    /// The same for the active turn (from after its user message).
    no_progress_in_turn: Option<Clear>,
}

impl PlanMemo {
    pub(super) fn gate_for(
        &mut self,
        t: &Transcript,
        cursor: usize,
        middle: &Range<usize>,
        first: &Range<usize>,
    ) -> Option<GateScan> {
        let g = self.gate.take()?;
        (g.lineage == t.lineage()
            && g.len <= t.len()
            && g.cursor == cursor
            && g.middle.start == middle.start
            && g.middle.end <= middle.end
            && g.ranges.first() == Some(first))
        .then_some(g)
    }

    pub(super) fn turn_for(
        &mut self,
        t: &Transcript,
        first: &Range<usize>,
        end_limit: usize,
    ) -> Option<TurnScan> {
        let s = self.turn.take()?;
        (s.lineage == t.lineage()
            && s.len <= t.len()
            && s.range.start == first.start
            && s.range.end >= first.end
            && s.end_limit <= end_limit)
            .then_some(s)
    }

    /// The part of the middle's `range` not yet known to hold no progress marker (may be
    /// empty).
    pub(super) fn progress_unknown(&self, t: &Transcript, range: &Range<usize>) -> Range<usize> {
        unknown(self.no_progress.as_ref(), t, range)
    }

    /// Records that the middle's `range` holds no progress marker.
    pub(super) fn progress_clear(&mut self, t: &Transcript, range: &Range<usize>) {
        self.no_progress = Some(clear(self.no_progress.as_ref(), t, range));
    }

    /// [`progress_unknown`](Self::progress_unknown) for the active turn's `range`.
    pub(super) fn turn_progress_unknown(
        &self,
        t: &Transcript,
        range: &Range<usize>,
    ) -> Range<usize> {
        unknown(self.no_progress_in_turn.as_ref(), t, range)
    }

    /// [`progress_clear`](Self::progress_clear) for the active turn's `range`.
    pub(super) fn turn_progress_clear(&mut self, t: &Transcript, range: &Range<usize>) {
        self.no_progress_in_turn = Some(clear(self.no_progress_in_turn.as_ref(), t, range));
    }
}

/// `known`'s range when it still applies and reaches `range`'s start.
fn clear_for<'a>(
    known: Option<&'a Clear>,
    t: &Transcript,
    range: &Range<usize>,
) -> Option<&'a Range<usize>> {
    known
        .filter(|c| {
            c.lineage == t.lineage()
                && c.len <= t.len()
                && c.range.start <= range.start
                && range.start <= c.range.end
        })
        .map(|c| &c.range)
}

fn unknown(known: Option<&Clear>, t: &Transcript, range: &Range<usize>) -> Range<usize> {
    match clear_for(known, t, range) {
        Some(c) => c.end.max(range.start)..range.end,
        None => range.clone(),
    }
}

fn clear(known: Option<&Clear>, t: &Transcript, range: &Range<usize>) -> Clear {
    let range = match clear_for(known, t, range) {
        Some(c) => c.start..c.end.max(range.end),
        None => range.clone(),
    };
    Clear {
        lineage: t.lineage(),
        len: t.len(),
        range,
    }
}

/// A reclaim-gate scan that found every absorbable exchange of the rewritable middle and
/// still fell short of the gate.
#[derive(Clone, Debug)]
pub(super) struct GateScan {
    pub(super) lineage: u64,
    pub(super) len: usize,
    pub(super) cursor: usize,
    pub(super) middle: Range<usize>,
    pub(super) ranges: Vec<Range<usize>>,
    pub(super) tokens: u64,
}

/// The same for the tool groups of a long turn: one contiguous range from the first group.
#[derive(Clone, Debug)]
pub(super) struct TurnScan {
    pub(super) lineage: u64,
    pub(super) len: usize,
    pub(super) end_limit: usize,
    pub(super) range: Range<usize>,
    pub(super) units: usize,
}

/// A range of the transcript known to hold no progress marker.
#[derive(Clone, Debug)]
struct Clear {
    lineage: u64,
    len: usize,
    range: Range<usize>,
}
