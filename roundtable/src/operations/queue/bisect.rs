//! Which states of a lane to check next. A lane's states are its
//! prefixes: the first `k` proposals of its batch stacked on the branch
//! (`k` from 1 to the batch's length; 0 is the branch itself, taken to
//! pass). The last state is checked first: when it passes, the whole
//! batch lands on that one check. When it fails, the first failing state
//! is found by bisection between the longest prefix known to pass and
//! the shortest known to fail, `depth` split points checked at once —
//! about log(len)/log(depth + 1) rounds of checks. A pure function of
//! what was checked so far.

use std::collections::BTreeSet;

/// What the checks said so far of the states of one lane of `len`
/// proposals.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    len: usize,
    passed: BTreeSet<usize>,
    failed: BTreeSet<usize>,
}

impl Search {
    /// Nothing checked yet, of a lane of `len` proposals.
    pub(crate) fn new(len: usize) -> Search {
        Search {
            len,
            passed: BTreeSet::new(),
            failed: BTreeSet::new(),
        }
    }

    /// How many proposals the lane has (its states are 1 to this).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The state of the first `prefix` proposals was checked: `passed`.
    pub(crate) fn record(&mut self, prefix: usize, passed: bool) {
        if passed {
            self.passed.insert(prefix);
        } else {
            self.failed.insert(prefix);
        }
    }

    /// The shortest prefix known to fail.
    pub(crate) fn first_failed(&self) -> Option<usize> {
        self.failed.first().copied()
    }

    /// The longest prefix known to pass below the shortest known to fail
    /// (0: none but the branch): what may land.
    pub(crate) fn passing(&self) -> usize {
        let below = self.first_failed().unwrap_or(usize::MAX);
        self.passed.range(..below).next_back().copied().unwrap_or(0)
    }

    /// Whether the state of the first `prefix` proposals is known to pass
    /// (0, the branch, always is): the branch may move to it.
    pub(crate) fn known_passing(&self, prefix: usize) -> bool {
        prefix == 0 || self.passed.contains(&prefix)
    }

    /// The culprit, once found: the proposal (1-based position) whose
    /// state fails while the state before it passes.
    pub(crate) fn culprit(&self) -> Option<usize> {
        self.first_failed().filter(|&hi| hi - self.passing() == 1)
    }

    /// The prefixes to check next, at most `depth` (at least one); none
    /// when the search is over — the last state passed, or the culprit is
    /// found.
    pub(crate) fn next(&self, depth: usize) -> Vec<usize> {
        if self.len == 0 {
            return Vec::new();
        }
        let Some(hi) = self.first_failed() else {
            return if self.passed.contains(&self.len) {
                Vec::new()
            } else {
                vec![self.len]
            };
        };
        let lo = self.passing();
        let gap = hi - lo;
        if gap <= 1 {
            return Vec::new();
        }
        // `k` split points evenly inside (lo, hi): distinct, since the
        // gap is at least k + 1.
        let k = depth.max(1).min(gap - 1);
        (1..=k).map(|j| lo + gap * j / (k + 1)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run the search on a lane whose states fail from `first_bad` on
    /// (`None`: all pass); the culprit or how much may land, and the
    /// number of states checked.
    fn run(len: usize, first_bad: Option<usize>, depth: usize) -> (Search, usize) {
        let mut s = Search::new(len);
        let mut checked = 0;
        loop {
            let next = s.next(depth);
            if next.is_empty() {
                return (s, checked);
            }
            assert!(next.len() <= depth.max(1));
            for p in next {
                assert!(p >= 1 && p <= len, "{p} of {len}");
                checked += 1;
                s.record(p, first_bad.is_none_or(|b| p < b));
            }
        }
    }

    #[test]
    fn a_passing_batch_takes_one_check() {
        for len in 1..=16 {
            let (s, checked) = run(len, None, 4);
            assert_eq!(checked, 1);
            assert_eq!(s.passing(), len);
            assert_eq!(s.culprit(), None);
        }
    }

    #[test]
    fn a_failing_batch_finds_its_first_failing_state() {
        for depth in 1..=4 {
            for len in 1..=16 {
                for bad in 1..=len {
                    let (s, checked) = run(len, Some(bad), depth);
                    assert_eq!(s.culprit(), Some(bad), "len {len} bad {bad} depth {depth}");
                    assert_eq!(s.passing(), bad - 1);
                    assert!(s.known_passing(bad - 1));
                    // The last state, then a bisection.
                    let bound = 1 + (usize::BITS - len.leading_zeros()) as usize;
                    assert!(checked <= bound * depth, "{checked} checks for {len}");
                }
            }
        }
        // Depth 1 is a binary search: 8 proposals, the 5th bad: 4 checks.
        assert_eq!(run(8, Some(5), 1).1, 4);
    }

    #[test]
    fn an_inconsistent_check_still_ends_on_a_state_that_passed() {
        // Passes at 3, fails at 2 (a flaky or order-dependent check): the
        // shortest failure and the longest pass below it decide.
        let mut s = Search::new(4);
        s.record(4, false);
        s.record(3, true);
        s.record(2, false);
        s.record(1, true);
        assert_eq!(s.culprit(), Some(2));
        assert_eq!(s.passing(), 1);
        assert!(s.next(2).is_empty());
    }
}
