//! What [`assemble_micro`](super::assemble_micro) returns, and the one vocabulary of micro
//! outcomes.

use serde::{Deserialize, Serialize};

use crate::edit::Edit;

/// The result of [`assemble_micro`](super::assemble_micro).
#[derive(Clone, Debug, PartialEq)]
pub enum MicroOutcome {
    /// Exchanges absorbed into the rolling micro marker.
    Absorbed {
        /// The edit of the planned-against transcript.
        edit: Edit,
        /// The cursor after the edit (the new marker's index plus one).
        cursor: usize,
        /// The new rolling summary (the marker's body).
        rolling_summary: String,
    },
    /// Tool groups of a long turn absorbed into the turn-progress marker.
    Progressed {
        /// The edit of the planned-against transcript.
        edit: Edit,
        /// The new progress summary (the marker's body).
        progress_summary: String,
    },
    /// The rolling marker rewritten shorter in place.
    Defrag {
        /// The edit (one in-place splice).
        edit: Edit,
        /// The new rolling summary.
        rolling_summary: String,
    },
    /// The defrag output was not short enough: a failed defrag, the transcript is unchanged.
    DefragFailed {
        /// Estimated tokens of the summary given to the defrag.
        input_tokens: u64,
        /// Estimated tokens of its output.
        output_tokens: u64,
    },
}

impl MicroOutcome {
    /// The edit to commit, if the outcome changes the transcript.
    pub fn edit(&self) -> Option<&Edit> {
        match self {
            MicroOutcome::Absorbed { edit, .. }
            | MicroOutcome::Progressed { edit, .. }
            | MicroOutcome::Defrag { edit, .. } => Some(edit),
            MicroOutcome::DefragFailed { .. } => None,
        }
    }

    /// Its name in the one micro vocabulary.
    pub fn kind(&self) -> MicroOutcomeKind {
        match self {
            MicroOutcome::Absorbed { .. } => MicroOutcomeKind::Absorbed,
            MicroOutcome::Progressed { .. } => MicroOutcomeKind::Progressed,
            MicroOutcome::Defrag { .. } => MicroOutcomeKind::Defrag,
            MicroOutcome::DefragFailed { .. } => MicroOutcomeKind::DefragFailed,
        }
    }
}

/// What a micro pass did: the one vocabulary of micro outcomes, used by this module
/// ([`MicroOutcome::kind`]), the facade's micro report and the telemetry line, and rendered
/// one way, by [`as_str`](Self::as_str) (the `outcome` strings of spec section 8; serde uses
/// them too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MicroOutcomeKind {
    /// One or more exchanges were folded into the rolling summary.
    Absorbed,
    /// Tool groups of a long turn were folded into its turn-progress marker. An absorption
    /// too: it renders as `absorbed`.
    Progressed,
    /// The summarizer failed; the transcript is unchanged and the failure counted.
    SummarizeFailed,
    /// The same exchange failed too often; the cursor moved past it.
    ExchangeSkipped,
    /// The rolling summary was re-summarized shorter in place.
    Defrag,
    /// The defrag failed or did not shrink the summary enough; absorption goes on next time.
    DefragFailed,
    /// The reclaim gate held the pass back (not enough to reclaim yet).
    Gated,
    /// Nothing to do (cadence, no whole exchange in the middle).
    #[default]
    Noop,
    /// The summary was made but the store refused or failed the commit; the transcript is
    /// unchanged.
    StoreFailed,
}

impl MicroOutcomeKind {
    /// Every outcome.
    const ALL: [MicroOutcomeKind; 9] = [
        MicroOutcomeKind::Absorbed,
        MicroOutcomeKind::Progressed,
        MicroOutcomeKind::SummarizeFailed,
        MicroOutcomeKind::ExchangeSkipped,
        MicroOutcomeKind::Defrag,
        MicroOutcomeKind::DefragFailed,
        MicroOutcomeKind::Gated,
        MicroOutcomeKind::Noop,
        MicroOutcomeKind::StoreFailed,
    ];

    /// The snake_case name (spec section 8): `absorbed` (for [`Progressed`](Self::Progressed)
    /// too), `summarize_failed`, `exchange_skipped`, `defrag`, `defrag_failed`, `gated`,
    /// `noop`, `store_failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            MicroOutcomeKind::Absorbed | MicroOutcomeKind::Progressed => "absorbed",
            MicroOutcomeKind::SummarizeFailed => "summarize_failed",
            MicroOutcomeKind::ExchangeSkipped => "exchange_skipped",
            MicroOutcomeKind::Defrag => "defrag",
            MicroOutcomeKind::DefragFailed => "defrag_failed",
            MicroOutcomeKind::Gated => "gated",
            MicroOutcomeKind::Noop => "noop",
            MicroOutcomeKind::StoreFailed => "store_failed",
        }
    }

    /// The outcome named `s` by [`as_str`](Self::as_str) (`absorbed` gives
    /// [`Absorbed`](Self::Absorbed)).
    fn from_name(s: &str) -> Option<MicroOutcomeKind> {
        MicroOutcomeKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s && *k != MicroOutcomeKind::Progressed)
    }
}

impl std::fmt::Display for MicroOutcomeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MicroOutcomeKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for MicroOutcomeKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        MicroOutcomeKind::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom("unknown micro outcome (expected a spec section 8 name)")
        })
    }
}
