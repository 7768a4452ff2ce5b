//! Which sorted runs of one bucket to compact, and into which level: a pure function of the
//! runs' levels and sizes (Java `UniversalCompaction`, `ForceUpLevel0Compaction`,
//! `CompactStrategy.pickFullCompaction`).
//!
//! Input: the bucket's sorted runs in [`super::levels::Levels`] order — every level-0 file is
//! its own run, newest first, then one run per non-empty level 1..=max. Output: a
//! [`CompactUnit`] naming a **prefix** of those runs and the output level.
//!
//! Invariants (checked by the property tests below):
//! * the output level is never 0 and at most the max level;
//! * the output level is at least the level of every run in the unit;
//! * no run outside the unit sits at the output level (the unit either stops right below the
//!   next run's level, or swallows the first non-zero level it reaches), so after replacing
//!   the unit's files by the output files every level >= 1 is still one sorted run;
//! * a unit is never empty.
//!
//! Java's optional `EarlyFullCompaction` (`compaction.total-size-threshold`, optimization
//! interval) and `OffPeakHours` are not modelled: they only make full compactions more likely.

/// A sorted run as the picker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunStat {
    pub level: i32,
    /// Total bytes of the run's files.
    pub size: u64,
}

/// Compact the first `runs` sorted runs into `output_level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactUnit {
    pub output_level: i32,
    pub runs: usize,
}

/// Java `UniversalCompaction` (RocksDB universal compaction): size amplification, then size
/// ratio, then the number of sorted runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniversalCompaction {
    /// `compaction.max-size-amplification-percent` (200).
    pub max_size_amp: u64,
    /// `compaction.size-ratio` (1, percent).
    pub size_ratio: u64,
    /// `num-sorted-run.compaction-trigger` (5).
    pub trigger: usize,
}

impl UniversalCompaction {
    /// Java `UniversalCompaction.pick`.
    pub fn pick(&self, num_levels: i32, runs: &[RunStat]) -> Option<CompactUnit> {
        let max_level = num_levels - 1;
        if let Some(unit) = self.pick_for_size_amp(max_level, runs) {
            return Some(unit);
        }
        if runs.len() >= self.trigger {
            if let Some(unit) = self.pick_for_size_ratio(max_level, runs, 1, false) {
                return Some(unit);
            }
        }
        if runs.len() > self.trigger {
            // Java: "compacting for file num"
            let candidates = runs.len() - self.trigger + 1;
            return self.pick_for_size_ratio(max_level, runs, candidates, false);
        }
        None
    }

    /// Everything, when all runs but the oldest together exceed `max_size_amp` percent of it.
    fn pick_for_size_amp(&self, max_level: i32, runs: &[RunStat]) -> Option<CompactUnit> {
        let (oldest, newer) = runs.split_last()?;
        if runs.len() < self.trigger {
            return None;
        }
        let candidate: u128 = newer.iter().map(|r| u128::from(r.size)).sum();
        (candidate * 100 > u128::from(self.max_size_amp) * u128::from(oldest.size)).then_some(
            CompactUnit {
                output_level: max_level,
                runs: runs.len(),
            },
        )
    }

    /// Java `pickForSizeRatio(maxLevel, runs, candidateCount, forcePick)`: grow the first
    /// `candidates` runs while the next run is not much larger than them, whatever its level
    /// (Java 1.3.1 looks at sizes only: a small newest run ahead of a large level-0 run stops
    /// there, and `create_unit` then swallows every run down to the first non-zero level).
    fn pick_for_size_ratio(
        &self,
        max_level: i32,
        runs: &[RunStat],
        candidates: usize,
        force: bool,
    ) -> Option<CompactUnit> {
        let mut count = candidates.min(runs.len());
        let mut size: u128 = runs[..count].iter().map(|r| u128::from(r.size)).sum();
        for next in &runs[count..] {
            // candidate * (100 + ratio) / 100 < next, in integers
            if size * (100 + u128::from(self.size_ratio)) < u128::from(next.size) * 100 {
                break;
            }
            size += u128::from(next.size);
            count += 1;
        }
        (force || count > 1).then(|| create_unit(runs, max_level, count))
    }

    /// Java `ForceUpLevel0Compaction`: the universal pick, else every level-0 run (grown by
    /// size ratio) — level 0 never stays behind.
    pub fn pick_force_up_level0(&self, num_levels: i32, runs: &[RunStat]) -> Option<CompactUnit> {
        if let Some(unit) = self.pick(num_levels, runs) {
            return Some(unit);
        }
        let level0 = runs.iter().take_while(|r| r.level == 0).count();
        (level0 > 0)
            .then(|| self.pick_for_size_ratio(num_levels - 1, runs, level0, true))
            .flatten()
    }
}

/// Java `UniversalCompaction.createUnit`: the output level is one below the first run left
/// out; level 0 is never an output, so a unit that would end there swallows runs up to and
/// including the first non-zero level, which becomes the output level. Taking every run
/// outputs to the max level.
fn create_unit(runs: &[RunStat], max_level: i32, mut count: usize) -> CompactUnit {
    let mut output_level = match runs.get(count) {
        None => max_level,
        Some(next) => (next.level - 1).max(0),
    };
    if output_level == 0 {
        for next in &runs[count..] {
            count += 1;
            if next.level != 0 {
                output_level = next.level;
                break;
            }
        }
    }
    if count == runs.len() {
        output_level = max_level;
    }
    CompactUnit {
        output_level,
        runs: count,
    }
}

/// What a full compaction rewrites (Java `CompactStrategy.pickFullCompaction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FullPick {
    /// Every run, into the max level.
    AllRuns(CompactUnit),
    /// The bucket already is one run at the max level: rewrite only its files that carry a
    /// deletion vector or, by their statistics, records that expired (record-level expiry),
    /// each on its own (Java also rewrites all with `force-rewrite-all-files`).
    MaxLevelRun,
}

/// Java `pickFullCompaction`: nothing for an empty bucket; a single run already at the max
/// level is only cleaned of deletion vectors and expired records; anything else goes to the max level.
pub fn pick_full(num_levels: i32, runs: &[RunStat]) -> Option<FullPick> {
    let max_level = num_levels - 1;
    match runs {
        [] => None,
        [only] if only.level == max_level => Some(FullPick::MaxLevelRun),
        _ => Some(FullPick::AllRuns(CompactUnit {
            output_level: max_level,
            runs: runs.len(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn runs(spec: &[(i32, u64)]) -> Vec<RunStat> {
        spec.iter()
            .map(|&(level, size)| RunStat { level, size })
            .collect()
    }

    fn level0(sizes: &[u64]) -> Vec<RunStat> {
        sizes
            .iter()
            .map(|&size| RunStat { level: 0, size })
            .collect()
    }

    fn universal(max_size_amp: u64, size_ratio: u64, trigger: usize) -> UniversalCompaction {
        UniversalCompaction {
            max_size_amp,
            size_ratio,
            trigger,
        }
    }

    /// Sizes of the picked runs, like Java's tests list the picked files' sizes.
    fn picked(runs: &[RunStat], unit: Option<CompactUnit>) -> Option<(Vec<u64>, i32)> {
        unit.map(|u| {
            (
                runs[..u.runs].iter().map(|r| r.size).collect(),
                u.output_level,
            )
        })
    }

    // The cases of Java `UniversalCompactionTest` and `ForceUpLevel0CompactionTest`.

    #[test]
    fn java_output_level() {
        let r = runs(&[(0, 1), (0, 1), (1, 1), (3, 1), (4, 1)]);
        let levels: Vec<i32> = (1..=5)
            .map(|n| create_unit(&r, 5, n).output_level)
            .collect();
        assert_eq!(levels, vec![1, 1, 2, 3, 5]);
    }

    #[test]
    fn java_pick() {
        let u = universal(25, 1, 3);
        let r = level0(&[1, 2, 3, 3]);
        assert_eq!(picked(&r, u.pick(3, &r)), Some((vec![1, 2, 3, 3], 2)));
        let r = runs(&[(0, 1), (1, 1), (2, 1), (3, 50)]);
        assert_eq!(picked(&r, u.pick(4, &r)), Some((vec![1, 1, 1], 2)));
        let r = runs(&[(0, 1), (1, 2), (2, 3), (3, 50)]);
        assert_eq!(picked(&r, u.pick(4, &r)), Some((vec![1, 2, 3], 2)));
    }

    #[test]
    fn java_no_output_level0() {
        let u = universal(25, 1, 3);
        let r = runs(&[(0, 1), (0, 1), (1, 1), (2, 50)]);
        assert_eq!(picked(&r, u.pick(3, &r)), Some((vec![1, 1, 1], 1)));
        let r = runs(&[(0, 1), (0, 2), (1, 3), (2, 50)]);
        assert_eq!(picked(&r, u.pick(3, &r)), Some((vec![1, 2, 3], 1)));
        let u = universal(200, 1, 5);
        let r = level0(&[1, 1, 1, 1024, 1024 * 1024]);
        assert_eq!(
            picked(&r, u.pick(6, &r)),
            Some((vec![1, 1, 1, 1024, 1024 * 1024], 5))
        );
    }

    /// Java `appendAndPickForSizeAmp`: a new run of size 1, then compact by size amplification.
    #[test]
    fn java_size_amplification() {
        let u = universal(25, 0, 1);
        let expected: [&[u64]; 17] = [
            &[2],
            &[3],
            &[4],
            &[1, 4],
            &[6],
            &[1, 6],
            &[8],
            &[1, 8],
            &[1, 1, 8],
            &[11],
            &[1, 11],
            &[1, 1, 11],
            &[14],
            &[1, 14],
            &[1, 1, 14],
            &[1, 1, 1, 14],
            &[18],
        ];
        let mut sizes = vec![1u64];
        for want in expected {
            sizes.insert(0, 1);
            if let Some(unit) = u.pick_for_size_amp(3, &level0(&sizes)) {
                sizes = vec![sizes[..unit.runs].iter().sum()];
            }
            assert_eq!(sizes, want);
        }
    }

    /// Java `pickForSizeRatio(compaction, sizes)`: run i at level i, picked runs summed first.
    fn size_ratio_step(u: &UniversalCompaction, sizes: &[u64]) -> Vec<u64> {
        let r: Vec<RunStat> = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| RunStat {
                level: i as i32,
                size,
            })
            .collect();
        let max_level = sizes.len() as i32;
        let unit = (r.len() >= u.trigger)
            .then(|| u.pick_for_size_ratio(max_level, &r, 1, false))
            .flatten();
        match unit {
            Some(unit) => {
                let mut out = vec![sizes[..unit.runs].iter().sum()];
                out.extend_from_slice(&sizes[unit.runs..]);
                out
            }
            None => sizes.to_vec(),
        }
    }

    #[test]
    fn java_size_ratio() {
        let u = universal(25, 1, 5);
        let expected: [&[u64]; 23] = [
            &[5],
            &[1, 5],
            &[1, 1, 5],
            &[1, 1, 1, 5],
            &[4, 5],
            &[1, 4, 5],
            &[1, 1, 4, 5],
            &[3, 4, 5],
            &[1, 3, 4, 5],
            &[2, 3, 4, 5],
            &[1, 2, 3, 4, 5],
            &[16],
            &[1, 16],
            &[1, 1, 16],
            &[1, 1, 1, 16],
            &[4, 16],
            &[1, 4, 16],
            &[1, 1, 4, 16],
            &[3, 4, 16],
            &[1, 3, 4, 16],
            &[2, 3, 4, 16],
            &[1, 2, 3, 4, 16],
            &[11, 16],
        ];
        let mut sizes = vec![1u64, 1, 1, 1];
        for want in expected {
            sizes.insert(0, 1);
            sizes = size_ratio_step(&u, &sizes);
            assert_eq!(sizes, want);
        }
        assert_eq!(
            size_ratio_step(&universal(25, 10, 2), &[8, 9, 10]),
            vec![8, 9, 10]
        );
        assert_eq!(
            size_ratio_step(&universal(25, 20, 2), &[8, 9, 10]),
            vec![27]
        );
    }

    /// The runs of Paimon 1.3.1's batch writer after a bulk load, a full compaction and five
    /// upserts (bytes as Java wrote them): the newest two runs are far smaller than the third,
    /// so the size ratio stops there and the unit swallows every level-0 run and the max level
    /// (Java's choice, seen in test_interop_java's upsert test), not only the level-0 runs.
    #[test]
    fn java_size_ratio_stops_at_a_large_level0_run() {
        let u = universal(200, 1, 5);
        let r = runs(&[
            (0, 12_000),
            (0, 8_144),
            (0, 52_268),
            (0, 33_275),
            (0, 22_027),
            (5, 144_009),
        ]);
        assert_eq!(
            u.pick(6, &r),
            Some(CompactUnit {
                output_level: 5,
                runs: 6
            })
        );
    }

    #[test]
    fn java_force_up_level0() {
        let u = universal(25, 1, 3);
        let r = level0(&[1, 2, 2, 2]);
        assert_eq!(
            picked(&r, u.pick_force_up_level0(3, &r)),
            Some((vec![1, 2, 2, 2], 2))
        );
        let r = runs(&[(0, 1), (1, 2), (2, 2)]);
        assert_eq!(
            picked(&r, u.pick_force_up_level0(3, &r)),
            Some((vec![1, 2, 2], 2))
        );
        let r = runs(&[(0, 1), (2, 2)]);
        assert_eq!(
            picked(&r, u.pick_force_up_level0(3, &r)),
            Some((vec![1], 1))
        );

        let u = universal(200, 1, 5);
        let level = |r: &[(i32, u64)]| u.pick_force_up_level0(3, &runs(r)).map(|u| u.output_level);
        assert_eq!(level(&[(0, 1), (0, 1)]), Some(2));
        assert_eq!(level(&[(0, 1), (1, 10)]), Some(2));
        assert_eq!(level(&[(0, 1), (0, 5), (2, 10)]), Some(1));
        assert_eq!(level(&[(2, 10)]), None);
        assert_eq!(level(&[(0, 1), (0, 5), (0, 10), (0, 20)]), Some(2));
    }

    #[test]
    fn full_compaction() {
        assert_eq!(pick_full(6, &[]), None);
        assert_eq!(pick_full(6, &runs(&[(5, 10)])), Some(FullPick::MaxLevelRun));
        let all = |runs| {
            Some(FullPick::AllRuns(CompactUnit {
                output_level: 5,
                runs,
            }))
        };
        assert_eq!(pick_full(6, &runs(&[(3, 10)])), all(1));
        assert_eq!(pick_full(6, &runs(&[(0, 1), (0, 1), (5, 10)])), all(3));
    }

    /// `(num_levels, runs)` with runs in Levels order: level-0 files, then strictly
    /// increasing non-zero levels.
    fn bucket() -> impl Strategy<Value = (i32, Vec<RunStat>)> {
        (2i32..8).prop_flat_map(|num_levels| {
            let max_level = num_levels - 1;
            (
                Just(num_levels),
                prop::collection::vec(0u64..1000, 0..8),
                prop::collection::btree_map(1..=max_level, 0u64..5000, 0..=max_level as usize),
            )
                .prop_map(|(num_levels, level0, higher)| {
                    let runs = level0
                        .into_iter()
                        .map(|size| RunStat { level: 0, size })
                        .chain(
                            higher
                                .into_iter()
                                .map(|(level, size)| RunStat { level, size }),
                        )
                        .collect();
                    (num_levels, runs)
                })
        })
    }

    /// The invariants of the module docs, and that applying the unit keeps every level >= 1 a
    /// single run.
    fn check(unit: CompactUnit, runs: &[RunStat], max_level: i32) -> Result<(), TestCaseError> {
        prop_assert!(unit.runs >= 1 && unit.runs <= runs.len());
        prop_assert!(unit.output_level >= 1 && unit.output_level <= max_level);
        for r in &runs[..unit.runs] {
            prop_assert!(
                r.level <= unit.output_level,
                "input level above the output level"
            );
        }
        for r in &runs[unit.runs..] {
            prop_assert!(
                r.level > unit.output_level,
                "a run left out is not above the output"
            );
        }
        if unit.runs == runs.len() {
            prop_assert_eq!(unit.output_level, max_level);
        }
        let mut after: Vec<i32> = runs[unit.runs..].iter().map(|r| r.level).collect();
        after.push(unit.output_level);
        after.sort_unstable();
        prop_assert!(
            after.windows(2).all(|w| w[0] < w[1]),
            "two runs share a level"
        );
        Ok(())
    }

    proptest! {
        #[test]
        fn picks_keep_level_invariants(
            (num_levels, runs) in bucket(),
            max_size_amp in 1u64..400,
            size_ratio in 0u64..100,
            trigger in 1usize..8,
        ) {
            let u = universal(max_size_amp, size_ratio, trigger);
            let max_level = num_levels - 1;
            match u.pick(num_levels, &runs) {
                Some(unit) => check(unit, &runs, max_level)?,
                None => prop_assert!(runs.len() <= trigger, "more runs than the trigger, no pick"),
            }
            match u.pick_force_up_level0(num_levels, &runs) {
                Some(unit) => check(unit, &runs, max_level)?,
                None => prop_assert!(runs.iter().all(|r| r.level > 0)),
            }
            match pick_full(num_levels, &runs) {
                Some(FullPick::AllRuns(unit)) => check(unit, &runs, max_level)?,
                Some(FullPick::MaxLevelRun) => {
                    prop_assert!(runs.len() == 1 && runs[0].level == max_level)
                }
                None => prop_assert!(runs.is_empty()),
            }
        }
    }
}
