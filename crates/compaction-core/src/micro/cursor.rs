//! Cursor resolution: the in-memory cursor when it agrees with the transcript, else
//! rehydration from the last summary marker.

use serde::{Deserialize, Serialize};

use super::MicroState;
use crate::marker;
use crate::message::MarkerKind;
use crate::regions::Regions;
use crate::transcript::Transcript;

/// Where a resolved cursor came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CursorSource {
    /// The in-memory cursor was inside the middle (and agreed with the transcript).
    Memory,
    /// Just after the last summary marker (rehydration).
    Marker {
        /// The marker's index.
        index: usize,
        /// Its kind (micro or batch).
        kind: MarkerKind,
    },
    /// No marker: the start of the middle.
    MiddleStart,
}

/// The cursor and rolling summary a pass works from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Index of the first middle message not yet absorbed.
    pub(crate) cursor: usize,
    /// Body of the rolling micro marker, if one exists.
    pub(crate) rolling_summary: Option<String>,
    /// Index of the rolling micro marker, if one exists.
    pub(crate) rolling_marker: Option<usize>,
    /// Where the cursor came from.
    pub(crate) source: CursorSource,
}

/// Resolves the cursor and rolling summary (spec section 5, step 2).
///
/// The in-memory cursor is used when it lies inside the middle (`middle.start..=middle.end`)
/// and, if the state holds a rolling summary, the nearest micro marker before it carries
/// exactly that body. Otherwise the transcript decides: just after the last micro or batch
/// marker between the head and the end of the tail (clamped to the middle), else the start of
/// the middle. A micro marker gives the rolling summary; a batch marker does not (see the
/// [module docs](crate::micro)).
pub(crate) fn resolve_cursor(t: &Transcript, r: &Regions, state: &MicroState) -> Resolved {
    let msgs = t.messages();
    let middle = &r.middle;
    if let Some(c) = state
        .cursor
        .filter(|c| middle.start <= *c && *c <= middle.end)
    {
        match &state.rolling_summary {
            None => {
                return Resolved {
                    cursor: c,
                    rolling_summary: None,
                    rolling_marker: None,
                    source: CursorSource::Memory,
                };
            }
            Some(body) => {
                let found = (middle.start..c)
                    .rev()
                    .find_map(|i| match marker::classify(&msgs[i]) {
                        Some(MarkerKind::Micro) => Some(Some(i)),
                        Some(MarkerKind::Batch) => Some(None),
                        _ => None,
                    })
                    .flatten();
                if let Some(i) = found
                    && marker::parse_body(&msgs[i]).as_deref() == Some(body.as_str())
                {
                    return Resolved {
                        cursor: c,
                        rolling_summary: Some(body.clone()),
                        rolling_marker: Some(i),
                        source: CursorSource::Memory,
                    };
                }
            }
        }
    }
    let last = (r.head.end..r.tail.end).rev().find_map(|i| {
        marker::classify(&msgs[i])
            .filter(|k| matches!(k, MarkerKind::Batch | MarkerKind::Micro))
            .map(|k| (i, k))
    });
    match last {
        Some((i, kind)) => {
            let cursor = (i + 1).clamp(middle.start, middle.end);
            let micro = kind == MarkerKind::Micro;
            Resolved {
                cursor,
                rolling_summary: if micro {
                    marker::parse_body(&msgs[i])
                } else {
                    None
                },
                rolling_marker: micro.then_some(i),
                source: CursorSource::Marker { index: i, kind },
            }
        }
        None => Resolved {
            cursor: middle.start,
            rolling_summary: None,
            rolling_marker: None,
            source: CursorSource::MiddleStart,
        },
    }
}
