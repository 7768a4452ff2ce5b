//! A loser tree (tournament tree) over run cursors, the structure Java's
//! `SortMergeReaderWithLoserTree` is named after.
//!
//! `nodes[0]` holds the overall winner, `nodes[1..k]` the loser of each internal match; leaf
//! `i` hangs below node `(i + k) / 2`. Only the winner's key changes between replays, so a
//! replay walks one leaf-to-root path: `log2(k)` comparisons. The runner-up (the best of the
//! others) is the best of the losers on the winner's path.
//!
//! The comparison is supplied by the caller on every call (`Less` = the first argument wins)
//! and must be a strict total order over leaves.

use std::cmp::Ordering;

/// Marks an empty node while building.
const EMPTY: usize = usize::MAX;

pub(super) struct LoserTree {
    nodes: Vec<usize>,
}

impl LoserTree {
    /// Play the initial tournament over leaves `0..k` (`k >= 1`).
    pub fn new(k: usize, mut cmp: impl FnMut(usize, usize) -> Ordering) -> Self {
        let mut nodes = vec![EMPTY; k.max(1)];
        for leaf in 0..k {
            let mut candidate = leaf;
            let mut node = (leaf + k) / 2;
            while node > 0 {
                if nodes[node] == EMPTY {
                    nodes[node] = candidate;
                    candidate = EMPTY;
                    break;
                }
                if cmp(nodes[node], candidate) == Ordering::Less {
                    std::mem::swap(&mut nodes[node], &mut candidate);
                }
                node /= 2;
            }
            if candidate != EMPTY {
                nodes[0] = candidate;
            }
        }
        LoserTree { nodes }
    }

    /// The leaf currently winning.
    pub fn winner(&self) -> usize {
        self.nodes[0]
    }

    /// Replay the matches of the winner after its value changed.
    pub fn replay(&mut self, mut cmp: impl FnMut(usize, usize) -> Ordering) {
        let k = self.nodes.len();
        let mut candidate = self.nodes[0];
        let mut node = (candidate + k) / 2;
        while node > 0 {
            if cmp(self.nodes[node], candidate) == Ordering::Less {
                std::mem::swap(&mut self.nodes[node], &mut candidate);
            }
            node /= 2;
        }
        self.nodes[0] = candidate;
    }

    /// The best leaf other than the winner, if there is another leaf.
    pub fn runner_up(&self, mut cmp: impl FnMut(usize, usize) -> Ordering) -> Option<usize> {
        let k = self.nodes.len();
        let mut node = (self.nodes[0] + k) / 2;
        let mut best: Option<usize> = None;
        while node > 0 {
            let loser = self.nodes[node];
            best = match best {
                Some(b) if cmp(b, loser) != Ordering::Greater => Some(b),
                _ => Some(loser),
            };
            node /= 2;
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drain `values` (one sorted list per leaf) through the tree; check global order and
    /// runner-ups against brute force.
    fn drain(lists: Vec<Vec<i32>>) -> Vec<i32> {
        let k = lists.len();
        let mut pos = vec![0usize; k];
        let head = |pos: &[usize], i: usize| lists[i].get(pos[i]).copied();
        let cmp = |pos: &[usize], a: usize, b: usize| match (head(pos, a), head(pos, b)) {
            (Some(x), Some(y)) => x.cmp(&y).then(a.cmp(&b)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => a.cmp(&b),
        };
        let mut tree = LoserTree::new(k, |a, b| cmp(&pos, a, b));
        let mut out = Vec::new();
        loop {
            let w = tree.winner();
            let Some(v) = head(&pos, w) else { break };
            let brute = (0..k).filter(|&i| i != w).min_by(|&a, &b| cmp(&pos, a, b));
            assert_eq!(tree.runner_up(|a, b| cmp(&pos, a, b)), brute);
            out.push(v);
            pos[w] += 1;
            tree.replay(|a, b| cmp(&pos, a, b));
        }
        out
    }

    #[test]
    fn merges_any_number_of_leaves() {
        for k in 1..=9 {
            let lists: Vec<Vec<i32>> = (0..k)
                .map(|i| (0..(i * 3 % 5 + 1)).map(|j| j * 7 % 11 + i).collect())
                .map(|mut v: Vec<i32>| {
                    v.sort();
                    v
                })
                .collect();
            let mut expected: Vec<i32> = lists.iter().flatten().copied().collect();
            expected.sort();
            assert_eq!(drain(lists), expected, "k = {k}");
        }
    }

    #[test]
    fn handles_empty_leaves() {
        assert_eq!(
            drain(vec![vec![], vec![2, 3], vec![], vec![1]]),
            vec![1, 2, 3]
        );
        assert_eq!(drain(vec![vec![]]), Vec::<i32>::new());
    }
}
