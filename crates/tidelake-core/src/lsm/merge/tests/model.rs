//! Property test: random sorted runs merged by `merge_sorted_runs` agree with a plain
//! in-memory model (sort all records by key and sequence number, fold each key), for
//! deduplicate, first-row, partial-update and aggregation (sum, max, listagg,
//! last_non_null_value), and output batches never exceed the batch size.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, Int8Type};
use arrow_array::{Array, Int32Array, Int64Array, RecordBatch, StringArray};
use proptest::prelude::*;
use tidelake_spec::types::TypeKind;

use super::{config, field, input, merge, string};
use crate::lsm::merge::MergeConfig;

#[derive(Debug, Clone)]
struct Rec {
    key: i64,
    seq: i64,
    kind: i8,
    a: Option<i64>,
    b: Option<i32>,
    c: Option<String>,
}

type Row = (i8, i64, Option<i64>, Option<i32>, Option<String>);

#[derive(Debug, Clone, Copy)]
enum Engine {
    Dedup,
    FirstRow,
    PartialUpdate,
    /// a: sum, b: max (ignore-retract), c: listagg (ignore-retract)
    Aggregate,
    /// every column last_non_null_value
    AggregateDefault,
}

const KINDS: [&str; 4] = ["+I", "-U", "+U", "-D"];

fn merge_config(engine: Engine, ignore_delete: bool, keep: bool) -> MergeConfig {
    let fields = vec![
        field("k", TypeKind::BigInt, false),
        field("a", TypeKind::BigInt, true),
        field("b", TypeKind::Int, true),
        field("c", string(), true),
    ];
    let mut options = vec![];
    if ignore_delete {
        options.push(("ignore-delete", "true"));
    }
    match engine {
        Engine::Dedup => {}
        Engine::FirstRow => options.push(("merge-engine", "first-row")),
        Engine::PartialUpdate => options.push(("merge-engine", "partial-update")),
        Engine::Aggregate => options.extend([
            ("merge-engine", "aggregation"),
            ("fields.a.aggregate-function", "sum"),
            ("fields.b.aggregate-function", "max"),
            ("fields.b.ignore-retract", "true"),
            ("fields.c.aggregate-function", "listagg"),
            ("fields.c.ignore-retract", "true"),
        ]),
        Engine::AggregateDefault => options.push(("merge-engine", "aggregation")),
    }
    let mut c = config(&fields, &["k"], &options).expect("valid model config");
    c.keep_retracts = keep;
    c
}

fn blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.chars().all(|c| c == ' '))
}

/// Fold the records of one key (sorted by sequence number); `Err` where Java throws.
fn fold(engine: Engine, ignore_delete: bool, recs: &[Rec]) -> Result<Option<Row>, ()> {
    let row = |r: &Rec, kind: i8| Some((kind, r.key, r.a, r.b, r.c.clone()));
    let retract = |r: &Rec| r.kind == 1 || r.kind == 3;
    if let [r] = recs {
        return Ok(row(r, r.kind));
    }
    let key = recs[0].key;
    match engine {
        Engine::Dedup => Ok(recs
            .iter()
            .rev()
            .find(|r| !(ignore_delete && retract(r)))
            .and_then(|r| row(r, r.kind))),
        Engine::FirstRow => {
            if !ignore_delete && recs.iter().any(retract) {
                return Err(());
            }
            Ok(recs
                .iter()
                .find(|r| !retract(r))
                .and_then(|r| row(r, r.kind)))
        }
        Engine::PartialUpdate => {
            let (mut a, mut b, mut c) = (None, None, None);
            let mut inserted = false;
            for r in recs {
                // a retract's values never enter the row: Java's initRow takes only the NOT NULL
                // columns (the key here)
                if retract(r) {
                    if !ignore_delete {
                        return Err(());
                    }
                    continue;
                }
                a = r.a.or(a);
                b = r.b.or(b);
                c = r.c.clone().or(c);
                inserted = true;
            }
            Ok(Some((if inserted { 0 } else { 3 }, key, a, b, c)))
        }
        Engine::Aggregate => {
            let (mut a, mut b, mut c): (Option<i64>, Option<i32>, Option<String>) =
                (None, None, None);
            for r in recs {
                if retract(r) {
                    a = match (a, r.a) {
                        (None, x) => x.map(|x| -x),
                        (acc, None) => acc,
                        (Some(acc), Some(x)) => Some(acc - x),
                    };
                    continue;
                }
                a = match (a, r.a) {
                    (Some(x), Some(y)) => Some(x + y),
                    (x, y) => x.or(y),
                };
                b = match (b, r.b) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                };
                if !blank(&r.c) {
                    c = if blank(&c) {
                        r.c.clone()
                    } else {
                        Some(format!(
                            "{},{}",
                            c.unwrap_or_default(),
                            r.c.clone().unwrap_or_default()
                        ))
                    };
                }
            }
            Ok(Some((0, key, a, b, c)))
        }
        Engine::AggregateDefault => {
            let (mut a, mut b, mut c) = (None, None, None);
            for r in recs {
                if retract(r) {
                    a = if r.a.is_some() { None } else { a };
                    b = if r.b.is_some() { None } else { b };
                    c = if r.c.is_some() { None } else { c };
                } else {
                    a = r.a.or(a);
                    b = r.b.or(b);
                    c = r.c.clone().or(c);
                }
            }
            Ok(Some((0, key, a, b, c)))
        }
    }
}

fn model(
    runs: &[Vec<Rec>],
    engine: Engine,
    ignore_delete: bool,
    keep: bool,
) -> Result<Vec<Row>, ()> {
    let mut by_key: BTreeMap<i64, Vec<Rec>> = BTreeMap::new();
    for r in runs.iter().flatten() {
        by_key.entry(r.key).or_default().push(r.clone());
    }
    let mut out = Vec::new();
    for recs in by_key.values_mut() {
        recs.sort_by_key(|r| r.seq);
        if let Some(row) = fold(engine, ignore_delete, recs)? {
            if keep || row.0 == 0 || row.0 == 2 {
                out.push(row);
            }
        }
    }
    Ok(out)
}

fn to_batch(recs: &[Rec]) -> RecordBatch {
    let kinds: Vec<&str> = recs.iter().map(|r| KINDS[r.kind as usize]).collect();
    input(
        &recs.iter().map(|r| r.seq).collect::<Vec<_>>(),
        &kinds,
        vec![
            Arc::new(Int64Array::from(
                recs.iter().map(|r| r.key).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                recs.iter().map(|r| r.a).collect::<Vec<_>>(),
            )),
            Arc::new(Int32Array::from(
                recs.iter().map(|r| r.b).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                recs.iter().map(|r| r.c.clone()).collect::<Vec<_>>(),
            )),
        ],
    )
}

fn output_rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let kinds = b.column(0).as_primitive::<Int8Type>();
        let k = b.column(1).as_primitive::<Int64Type>();
        let a = b.column(2).as_primitive::<Int64Type>();
        let bb = b.column(3).as_primitive::<Int32Type>();
        let c = b.column(4).as_string::<i32>();
        for i in 0..b.num_rows() {
            out.push((
                kinds.value(i),
                k.value(i),
                a.is_valid(i).then(|| a.value(i)),
                bb.is_valid(i).then(|| bb.value(i)),
                c.is_valid(i).then(|| c.value(i).to_string()),
            ));
        }
    }
    out
}

/// Runs of records: distinct sorted keys per run, unique sequence numbers overall.
fn runs_strategy() -> impl Strategy<Value = Vec<Vec<Rec>>> {
    let rec = (
        0i64..24,
        prop::sample::select(vec![0i8, 0, 0, 2, 2, 1, 3, 3]),
        prop::option::of(-50i64..50),
        prop::option::of(-50i32..50),
        prop::option::of(prop::sample::select(vec!["x", "y", "zz", "", " ", "é"])),
    );
    prop::collection::vec(prop::collection::vec(rec, 0..20), 1..6)
        .prop_flat_map(|runs| {
            let total: usize = runs.iter().map(Vec::len).sum();
            (
                Just(runs),
                Just((0..total as i64).collect::<Vec<_>>()).prop_shuffle(),
            )
        })
        .prop_map(|(runs, seqs)| {
            let mut seqs = seqs.into_iter();
            runs.into_iter()
                .map(|run| {
                    let mut by_key: BTreeMap<i64, Rec> = BTreeMap::new();
                    for (key, kind, a, b, c) in run {
                        let seq = seqs.next().expect("one sequence number per record");
                        by_key.insert(
                            key,
                            Rec {
                                key,
                                seq,
                                kind,
                                a,
                                b,
                                c: c.map(String::from),
                            },
                        );
                    }
                    by_key.into_values().collect()
                })
                .collect()
        })
}

fn check(
    runs: Vec<Vec<Rec>>,
    cuts: Vec<usize>,
    engine: Engine,
    ignore_delete: bool,
    keep: bool,
    batch_size: usize,
) -> Result<(), TestCaseError> {
    let expected = model(&runs, engine, ignore_delete, keep);
    let mut cuts = cuts.into_iter().cycle();
    let batches: Vec<Vec<RecordBatch>> = runs
        .iter()
        .map(|run| {
            let mut out = Vec::new();
            let mut start = 0;
            while start < run.len() {
                // a cut of 0 inserts an empty batch
                let cut = cuts.next().unwrap_or(1);
                if cut == 0 {
                    out.push(to_batch(&[]));
                }
                let len = cut.max(1).min(run.len() - start);
                out.push(to_batch(&run[start..start + len]));
                start += len;
            }
            out
        })
        .collect();
    let actual = merge(
        batches,
        merge_config(engine, ignore_delete, keep),
        batch_size,
    );
    match (expected, actual) {
        (Err(()), Err(_)) => Ok(()),
        (Ok(rows), Ok(out)) => {
            prop_assert!(out
                .iter()
                .all(|b| b.num_rows() <= batch_size && b.num_rows() > 0));
            prop_assert_eq!(output_rows(&out), rows);
            Ok(())
        }
        (e, a) => Err(TestCaseError::fail(format!(
            "model {e:?} vs merge {:?}",
            a.map(|b| output_rows(&b))
        ))),
    }
}

fn engine_strategy() -> impl Strategy<Value = Engine> {
    prop::sample::select(vec![
        Engine::Dedup,
        Engine::FirstRow,
        Engine::PartialUpdate,
        Engine::Aggregate,
        Engine::AggregateDefault,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn merge_matches_model(
        runs in runs_strategy(),
        cuts in prop::collection::vec(0usize..6, 1..8),
        engine in engine_strategy(),
        ignore_delete in any::<bool>(),
        keep in any::<bool>(),
        batch_size in 1usize..8,
    ) {
        check(runs, cuts, engine, ignore_delete, keep, batch_size)?;
    }
}
