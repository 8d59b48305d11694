//! Lanes: the queued proposals split into groups that share no touched
//! path, each keeping queue order. A pure function of the paths.

use std::collections::BTreeSet;

/// Whether two touched paths are the same file, or one is a directory
/// the other lies in (a file replaced by a directory, or back).
fn overlap(a: &str, b: &str) -> bool {
    let under = |long: &str, short: &str| {
        long.len() > short.len() && long.starts_with(short) && long.as_bytes()[short.len()] == b'/'
    };
    a == b || under(a, b) || under(b, a)
}

/// The lanes of items whose touched paths are `paths` (in queue order):
/// items that overlap, directly or through others, share a lane. Each lane
/// lists item indexes in queue order; lanes are ordered by their first
/// item. With `separate` false, one lane holds every item.
pub(crate) fn lanes(paths: &[BTreeSet<String>], separate: bool) -> Vec<Vec<usize>> {
    if !separate {
        return if paths.is_empty() {
            Vec::new()
        } else {
            vec![(0..paths.len()).collect()]
        };
    }
    // Union-find over the items; a later item joins every lane it touches.
    let mut parent: Vec<usize> = (0..paths.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for i in 0..paths.len() {
        for j in 0..i {
            if paths[i]
                .iter()
                .any(|a| paths[j].iter().any(|b| overlap(a, b)))
            {
                let (ri, rj) = (root(&mut parent, i), root(&mut parent, j));
                // The lane keeps its earliest item as its root.
                let (low, high) = (ri.min(rj), ri.max(rj));
                parent[high] = low;
            }
        }
    }
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut lane_of = vec![usize::MAX; paths.len()];
    for i in 0..paths.len() {
        let r = root(&mut parent, i);
        if lane_of[r] == usize::MAX {
            lane_of[r] = out.len();
            out.push(Vec::new());
        }
        out[lane_of[r]].push(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn disjoint_paths_make_separate_lanes_and_overlap_joins_them_transitively() {
        let items = [
            set(&["a.py"]),
            set(&["b.py"]),
            set(&["c.py", "a.py"]),
            set(&["d/e.py"]),
            set(&["d"]),
            set(&["b.pyc"]),
        ];
        assert_eq!(
            lanes(&items, true),
            vec![vec![0, 2], vec![1], vec![3, 4], vec![5]]
        );
        assert_eq!(lanes(&items, false), vec![vec![0, 1, 2, 3, 4, 5]]);
        assert!(lanes(&[], true).is_empty());
        assert!(lanes(&[], false).is_empty());
    }

    #[test]
    fn a_later_item_merges_two_earlier_lanes_in_queue_order() {
        let items = [set(&["x"]), set(&["y"]), set(&["z"]), set(&["x", "y"])];
        assert_eq!(lanes(&items, true), vec![vec![0, 1, 3], vec![2]]);
    }
}
