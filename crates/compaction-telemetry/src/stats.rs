//! Exact order statistics over a sparse value -> count map.
//!
//! Durations, occupancy (in tenths of a percent) and message indexes take few distinct
//! values, so storing one counter per distinct value gives exact medians in memory that grows
//! with the number of distinct values, not with the number of log lines.

use std::collections::BTreeMap;

/// A multiset of `u64` values.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Counts {
    counts: BTreeMap<u64, u64>,
    len: u64,
}

impl Counts {
    pub fn add(&mut self, value: u64) {
        *self.counts.entry(value).or_insert(0) += 1;
        self.len += 1;
    }

    pub fn merge(&mut self, other: &Counts) {
        for (&v, &n) in &other.counts {
            *self.counts.entry(v).or_insert(0) += n;
        }
        self.len += other.len;
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn min(&self) -> Option<u64> {
        self.counts.keys().next().copied()
    }

    pub fn max(&self) -> Option<u64> {
        self.counts.keys().next_back().copied()
    }

    /// The median; the mean of the two middle values when the count is even.
    pub fn median(&self) -> Option<f64> {
        if self.len == 0 {
            return None;
        }
        let lo = self.nth((self.len - 1) / 2)?;
        let hi = self.nth(self.len / 2)?;
        Some((lo as f64 + hi as f64) / 2.0)
    }

    /// The value at 0-based rank `k` in sorted order.
    fn nth(&self, k: u64) -> Option<u64> {
        let mut seen = 0;
        for (&v, &n) in &self.counts {
            seen += n;
            if k < seen {
                return Some(v);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[u64]) -> Counts {
        let mut c = Counts::default();
        values.iter().for_each(|&v| c.add(v));
        c
    }

    #[test]
    fn median_min_max() {
        assert_eq!(of(&[]).median(), None);
        assert_eq!(of(&[5]).median(), Some(5.0));
        assert_eq!(of(&[9, 1, 5]).median(), Some(5.0));
        assert_eq!(of(&[1, 2, 2, 10]).median(), Some(2.0));
        assert_eq!(of(&[1, 4]).median(), Some(2.5));
        let c = of(&[7, 3, 3, 12]);
        assert_eq!((c.min(), c.max()), (Some(3), Some(12)));
    }

    #[test]
    fn merge_equals_adding_everything() {
        let mut a = of(&[1, 2, 3]);
        a.merge(&of(&[3, 4]));
        assert_eq!(a, of(&[1, 2, 3, 3, 4]));
    }
}
