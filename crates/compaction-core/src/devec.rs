//! [`DeVec`]: a contiguous vector with free slots at both ends, so that a splice moves only the
//! shorter side of the sequence.
//!
//! A micro pass replaces a few messages just after the head of a transcript that may hold
//! 100,000 messages. With a plain `Vec` every such splice shifts everything after it; here it
//! shifts the few messages before it instead, and appends stay amortized O(1) at the back. The
//! elements stay contiguous, so readers keep a plain slice.
//!
//! Safe code only: the free slots at the front hold cheap placeholder values (an empty message,
//! a zero), never exposed through [`DeVec::as_slice`].

use std::ops::Range;

/// A value that can fill a free slot without allocating.
pub(crate) trait Placeholder {
    /// The filler.
    fn placeholder() -> Self;
}

impl Placeholder for i64 {
    fn placeholder() -> i64 {
        0
    }
}

/// Elements live in `buf[start..]`; `buf[..start]` are placeholders.
#[derive(Clone)]
pub(crate) struct DeVec<T> {
    buf: Vec<T>,
    start: usize,
}

impl<T: std::fmt::Debug> std::fmt::Debug for DeVec<T> {
    /// The elements only, as a list: the free slots are an implementation detail.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.buf[self.start..]).finish()
    }
}

impl<T: Placeholder> DeVec<T> {
    pub(crate) fn from_vec(buf: Vec<T>) -> DeVec<T> {
        DeVec { buf, start: 0 }
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        &self.buf[self.start..]
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.buf[self.start..]
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len() - self.start
    }

    pub(crate) fn push(&mut self, x: T) {
        self.buf.push(x);
    }

    /// The elements as a plain vector: O(len) when there are free front slots.
    pub(crate) fn into_vec(mut self) -> Vec<T> {
        self.buf.drain(..self.start);
        self.buf
    }

    /// Replaces `range` with `items` and returns the removed elements, moving whichever of the
    /// elements before `range.start` or after `range.end` are fewer. Panics if `range` is out
    /// of bounds, like `Vec::splice`.
    pub(crate) fn splice(&mut self, range: Range<usize>, items: Vec<T>) -> Vec<T> {
        let len = self.len();
        assert!(
            range.start <= range.end && range.end <= len,
            "splice {range:?} out of bounds for length {len}"
        );
        if range.start > len - range.end {
            // The back is shorter: what follows the range moves.
            let s = self.start;
            return self
                .buf
                .splice(s + range.start..s + range.end, items)
                .collect();
        }
        let (p, r, k) = (range.start, range.len(), items.len());
        let s = self.start;
        let removed: Vec<T> = self.buf[s + p..s + p + r]
            .iter_mut()
            .map(|x| std::mem::replace(x, T::placeholder()))
            .collect();
        // Free slots now: `buf[s+p .. s+p+r]`.
        if r >= k {
            // The new items take the last `k` free slots; the `r - k` left over move to the
            // front by rotating them past the elements before the range.
            let spare = r - k;
            for (slot, x) in self.buf[s + p + spare..s + p + r].iter_mut().zip(items) {
                *slot = x;
            }
            self.buf[s..s + p + spare].rotate_right(spare);
            self.start += spare;
        } else {
            // `k - r` more slots are needed: take them from the front, growing it if short.
            let need = k - r;
            if self.start < need {
                let grow = need - self.start + len / 8 + 16;
                self.buf
                    .splice(0..0, std::iter::repeat_with(T::placeholder).take(grow));
                self.start += grow;
            }
            let s = self.start;
            self.buf[s - need..s + p].rotate_left(need);
            self.start -= need;
            let s = self.start;
            for (slot, x) in self.buf[s + p..s + p + k].iter_mut().zip(items) {
                *slot = x;
            }
        }
        // Keep the placeholders at most as many as the elements.
        if self.start > 64 && self.start > self.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn splices_match_vec_splice(
            init in 0usize..300,
            ops in proptest::collection::vec((0usize..400, 0usize..8, 0usize..12, proptest::bool::ANY), 1..60),
        ) {
            let mut model: Vec<i64> = (0..init as i64).map(|x| x + 1).collect();
            let mut d = DeVec::from_vec(model.clone());
            let mut next = 1_000i64;
            for (at, del, ins, push) in ops {
                if push {
                    model.push(next);
                    d.push(next);
                    next += 1;
                    continue;
                }
                let start = at.min(model.len());
                let end = (start + del).min(model.len());
                let items: Vec<i64> = (0..ins as i64).map(|k| next + k).collect();
                next += ins as i64;
                let expected: Vec<i64> = model.splice(start..end, items.clone()).collect();
                let removed = d.splice(start..end, items);
                proptest::prop_assert_eq!(removed, expected);
                proptest::prop_assert_eq!(d.as_slice(), &model[..]);
                proptest::prop_assert_eq!(d.len(), model.len());
            }
            proptest::prop_assert_eq!(d.into_vec(), model);
        }
    }

    #[test]
    fn a_splice_near_the_front_moves_only_the_front() {
        let mut d = DeVec::from_vec((0..10_000i64).collect());
        // Replace 5 elements at index 3 with one: the three before move, the rest stay.
        let removed = d.splice(3..8, vec![-1]);
        assert_eq!(removed, vec![3, 4, 5, 6, 7]);
        assert_eq!(d.start, 4);
        assert_eq!(&d.as_slice()[..5], &[0, 1, 2, -1, 8]);
        assert_eq!(d.len(), 9_996);
        // Growing at the front reuses the free slots, then allocates more.
        d.splice(0..0, vec![-2; 6]);
        assert_eq!(&d.as_slice()[..7], &[-2, -2, -2, -2, -2, -2, 0]);
        assert_eq!(d.len(), 10_002);
        // Debug shows the elements, not the free slots.
        let small = {
            let mut s = DeVec::from_vec(vec![1i64, 2, 3, 4]);
            s.splice(0..2, vec![9]);
            s
        };
        assert_eq!(format!("{small:?}"), "[9, 3, 4]");
    }
}
