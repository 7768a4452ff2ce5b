//! Automatic tags (`tag.automatic-creation`), as Java 1.3's committer creates them after each
//! commit (`TagAutoCreation`, `TagBatchCreation`, `TagPeriodHandler`, `TagTimeExtractor`).
//!
//! * `process-time` / `watermark`: each snapshot after the last automatic tag has a time (its
//!   commit time in `sink.process-time-zone`, by default the local zone, or its watermark in
//!   `sink.watermark-time-zone`, by default UTC; no watermark: no time; see [`super::zone`]).
//!   The first snapshot with a time, when no automatic tag exists, and afterwards every
//!   snapshot whose time minus `tag.creation-delay` reaches the end of the period after the
//!   last tag, is tagged with the period before the one its time falls in (periods are aligned
//!   on the epoch), or with the next period when `tag.automatic-completion` is set. Names follow
//!   `tag.creation-period` and `tag.period-formatter` (`2024-05-14`, `2024-05-14 03`,
//!   `202405140300` for `tag.creation-period-duration`); a name that parses as one is an
//!   automatic tag. Beyond `tag.num-retained-max` automatic tags the oldest (by snapshot) go.
//! * `batch`: after a commit, the latest snapshot is tagged `batch-write-<date>` (its commit
//!   date in `sink.process-time-zone`; or `tag.batch.customized-name`), replacing a tag of
//!   that name; beyond `tag.num-retained-max` tags (all of them, counted as Java counts them:
//!   see [`trim_batch_tags`]) the oldest go.
//! * Created tags carry `tag.default-time-retained` as any tag does ([`super::tags`]); the
//!   progress is read back from the tags themselves, so every committer continues where the
//!   last one (tidelake's or Java's) stopped.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{NaiveDate, NaiveDateTime};
use tidelake_spec::options::{
    Options, TagCreationMode, TagCreationPeriod, TagPeriodFormatter, SINK_PROCESS_TIME_ZONE,
    SINK_WATERMARK_TIME_ZONE,
};
use tidelake_spec::snapshot::Snapshot;

use crate::error::{Error, Result};
use crate::maintenance::tags::{
    delete_tag, delete_tag_with, new_tag, put_new_tag, tag_created, Callbacks,
};
use crate::maintenance::zone::Zone;
use crate::snapshots::{tag_path, TAG_DIR};
use crate::table::Table;

/// A piece of an automatic tag name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Piece {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Lit(char),
}

use Piece::{Day, Hour, Lit, Minute, Month, Year};

const DAY_DASHES: &[Piece] = &[Year, Lit('-'), Month, Lit('-'), Day];
const DAY_PLAIN: &[Piece] = &[Year, Month, Day];
const HOUR_DASHES: &[Piece] = &[Year, Lit('-'), Month, Lit('-'), Day, Lit(' '), Hour];
const HOUR_PLAIN: &[Piece] = &[Year, Month, Day, Lit(' '), Hour];
const HOUR_COMPACT: &[Piece] = &[Year, Month, Day, Hour];
const MINUTE: &[Piece] = &[Year, Month, Day, Hour, Minute];

/// The periods of automatic tags and their names (Java `TagPeriodHandler`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeriodHandler {
    period: chrono::Duration,
    pieces: &'static [Piece],
    /// Daily names: only the text before the first space is the date (Java).
    daily: bool,
}

impl PeriodHandler {
    /// The handler of `options`; `tag.creation-period-duration` wins over the period.
    pub fn of(options: &Options) -> Result<PeriodHandler> {
        let spec = |e| Error::from_spec("table options", e);
        let formatter = options.tag_period_formatter().map_err(spec)?;
        if let Some(d) = options.tag_creation_period_duration().map_err(spec)? {
            let period = chrono::Duration::from_std(d)
                .ok()
                .filter(|p| p.num_milliseconds() > 0)
                .ok_or_else(|| {
                    Error::invalid(format!("option 'tag.creation-period-duration' = {d:?}"))
                })?;
            return Ok(PeriodHandler {
                period,
                pieces: MINUTE,
                daily: false,
            });
        }
        let (hours, pieces, daily) = match options.tag_creation_period().map_err(spec)? {
            TagCreationPeriod::Daily => match formatter {
                TagPeriodFormatter::WithDashes => (24, DAY_DASHES, true),
                _ => (24, DAY_PLAIN, true),
            },
            TagCreationPeriod::Hourly => match formatter {
                TagPeriodFormatter::WithDashes => (1, HOUR_DASHES, false),
                TagPeriodFormatter::WithoutDashes => (1, HOUR_PLAIN, false),
                TagPeriodFormatter::WithoutDashesAndSpaces => (1, HOUR_COMPACT, false),
            },
            TagCreationPeriod::TwoHours => (2, HOUR_DASHES, false),
        };
        Ok(PeriodHandler {
            period: chrono::Duration::hours(hours),
            pieces,
            daily,
        })
    }

    /// The name of the tag of the period starting at `time`.
    pub fn name(&self, time: NaiveDateTime) -> String {
        use chrono::{Datelike, Timelike};
        self.pieces
            .iter()
            .map(|p| match p {
                Year => format!("{:04}", time.year()),
                Month => format!("{:02}", time.month()),
                Day => format!("{:02}", time.day()),
                Hour => format!("{:02}", time.hour()),
                Minute => format!("{:02}", time.minute()),
                Lit(c) => c.to_string(),
            })
            .collect()
    }

    /// The start of the period tag `name` names; `None` when it is not an automatic tag's
    /// name (Java parses with a strict fixed-width formatter).
    pub fn time_of(&self, name: &str) -> Option<NaiveDateTime> {
        let name = if self.daily {
            name.split(' ').next().unwrap_or(name)
        } else {
            name
        };
        let (mut rest, mut fields) = (name, [0u32, 1, 1, 0, 0]);
        for piece in self.pieces {
            let (width, slot) = match piece {
                Lit(c) => {
                    rest = rest.strip_prefix(*c)?;
                    continue;
                }
                Year => (4, 0),
                Month => (2, 1),
                Day => (2, 2),
                Hour => (2, 3),
                Minute => (2, 4),
            };
            let digits = rest.get(..width)?;
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            fields[slot] = digits.parse().ok()?;
            rest = &rest[width..];
        }
        if !rest.is_empty() {
            return None;
        }
        let [year, month, day, hour, minute] = fields;
        NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?.and_hms_opt(hour, minute, 0)
    }

    /// The start of the period before the one `time` falls in (Java
    /// `normalizeToPreviousTag`: periods aligned on the epoch of the local wall clock).
    pub fn previous_period(&self, time: NaiveDateTime) -> Option<NaiveDateTime> {
        let millis = time.and_utc().timestamp_millis();
        let period = self.period.num_milliseconds();
        // Java's long division truncates toward zero.
        let start = chrono::DateTime::from_timestamp_millis(millis / period * period)?.naive_utc();
        start.checked_sub_signed(self.period)
    }

    /// The start of the period after the one starting at `time`.
    pub fn next_period(&self, time: NaiveDateTime) -> Option<NaiveDateTime> {
        time.checked_add_signed(self.period)
    }
}

/// The state of automatic tagging (Java `TagAutoCreation`): the next snapshot to look at and
/// the start of the period the next tag will be of.
struct Progress {
    next_snapshot: i64,
    next_tag: Option<NaiveDateTime>,
}

/// The automatic tags of `table` with their snapshot ids, oldest snapshot first.
async fn auto_tags(table: &Table, handler: &PeriodHandler) -> Result<Vec<(String, i64)>> {
    let mut tags: Vec<(String, i64)> = table
        .snapshot_manager()
        .tags()
        .await?
        .into_iter()
        .filter(|(name, _)| handler.time_of(name).is_some())
        .map(|(name, tag)| (name, tag.snapshot.id))
        .collect();
    tags.sort_by_key(|(_, id)| *id);
    Ok(tags)
}

/// Where the last committer stopped: after the snapshot of the latest automatic tag (by
/// snapshot), or at the earliest snapshot when there is none.
async fn progress(table: &Table, handler: &PeriodHandler) -> Result<Progress> {
    let tags = auto_tags(table, handler).await?;
    let Some((name, id)) = tags.last() else {
        let earliest = table.snapshot_manager().earliest_id().await?;
        return Ok(Progress {
            next_snapshot: earliest.unwrap_or(1),
            next_tag: None,
        });
    };
    if tags.iter().filter(|(_, i)| i == id).count() > 1 {
        return Err(Error::invalid(format!(
            "snapshot {id} of {} has more than one automatic tag",
            table.location()
        )));
    }
    Ok(Progress {
        next_snapshot: id + 1,
        next_tag: handler.time_of(name).and_then(|t| handler.next_period(t)),
    })
}

/// What `tag.automatic-creation` = `process-time`/`watermark` needs.
struct PeriodicConfig {
    watermark: bool,
    /// The zone of the snapshots' times (process or watermark time zone).
    zone: Zone,
    handler: PeriodHandler,
    delay: chrono::Duration,
    completion: bool,
    num_retained_max: Option<i32>,
}

/// The time of `snapshot` for tagging in `zone`: its commit time, or its watermark (Java
/// ignores a missing watermark and `Long.MIN_VALUE`).
fn snapshot_time(
    table: &Table,
    snapshot: &Snapshot,
    watermark: bool,
    zone: Zone,
) -> Option<NaiveDateTime> {
    let millis = if watermark {
        snapshot.watermark.filter(|w| *w != i64::MIN)?
    } else {
        snapshot.time_millis
    };
    zone.local(table, millis)
}

/// Java `TagAutoCreation.run` then its `tryToCreateTags` for each new snapshot; returns the
/// names of the tags created.
async fn create_periodic(table: &Table, config: &PeriodicConfig) -> Result<Vec<String>> {
    let sm = table.snapshot_manager();
    let mut state = progress(table, &config.handler).await?;
    let mut created = Vec::new();
    loop {
        if !sm.exists(state.next_snapshot).await? {
            match sm.earliest_id().await? {
                Some(earliest) if earliest > state.next_snapshot => {
                    state.next_snapshot = earliest;
                    continue;
                }
                _ => break,
            }
        }
        let snapshot = sm.snapshot(state.next_snapshot).await?;
        state.next_snapshot += 1;
        let Some(time) = snapshot_time(table, &snapshot, config.watermark, config.zone) else {
            continue;
        };
        let due = match state.next_tag {
            None => true,
            Some(next) => config
                .handler
                .next_period(next)
                .is_some_and(|end| time - config.delay >= end),
        };
        if !due {
            continue;
        }
        let Some(mut this) = config.handler.previous_period(time) else {
            continue;
        };
        if let (true, Some(next)) = (config.completion, state.next_tag) {
            this = next;
        }
        let name = config.handler.name(this);
        let retained = table
            .schema()
            .options()
            .tag_default_time_retained()
            .map_err(|e| Error::from_spec("table options", e))?;
        if put_new_tag(table, &name, &new_tag(table, snapshot, retained)).await? {
            tag_created(table, &name).await?;
            created.push(name);
        }
        state.next_tag = config.handler.next_period(this);
        if let Some(max) = config.num_retained_max {
            let tags = auto_tags(table, &config.handler).await?;
            let excess = tags.len().saturating_sub(usize::try_from(max).unwrap_or(0));
            for (name, _) in tags.iter().take(excess) {
                delete_tag(table, name).await?;
            }
        }
    }
    Ok(created)
}

/// Java `TagBatchCreation.createTag`: tag the latest snapshot, replacing a tag of that name,
/// then keep at most `tag.num-retained-max` tags.
async fn create_batch(table: &Table, options: &Options, zone: Zone) -> Result<Vec<String>> {
    let spec = |e| Error::from_spec("table options", e);
    let Some(snapshot) = table.snapshot_manager().latest().await? else {
        return Ok(Vec::new());
    };
    let name = match options.tag_batch_customized_name() {
        Some(name) => name.to_string(),
        None => {
            let time = snapshot_time(table, &snapshot, false, zone).ok_or_else(|| {
                Error::invalid(format!("snapshot {} has no valid time", snapshot.id))
            })?;
            format!("batch-write-{}", time.format("%Y-%m-%d"))
        }
    };
    if table.branch_io().exists(&tag_path(&name)).await? {
        delete_tag(table, &name).await?;
    }
    let retained = options.tag_default_time_retained().map_err(spec)?;
    if put_new_tag(table, &name, &new_tag(table, snapshot, retained)).await? {
        tag_created(table, &name).await?;
    }
    if let Some(max) = options.tag_num_retained_max().map_err(spec)? {
        trim_batch_tags(table, usize::try_from(max).unwrap_or(0)).await?;
    }
    Ok(vec![name])
}

/// Java `TagManager.tagCount`: the entries of `tag/` named `tag-*`, directories included, so
/// `tag/tag-success-file` counts as a tag here (and only here).
async fn java_tag_count(table: &Table) -> Result<usize> {
    let io = table.branch_io();
    let files = io
        .list_dir(TAG_DIR)
        .await?
        .iter()
        .filter(|f| {
            f.path
                .rsplit('/')
                .next()
                .is_some_and(|n| n.starts_with("tag-"))
        })
        .count();
    let dirs = io
        .list_subdirs(TAG_DIR)
        .await?
        .iter()
        .filter(|d| d.starts_with("tag-"))
        .count();
    Ok(files + dirs)
}

/// Java `TagBatchCreation.expireTag`: while more than `max` tags are counted
/// ([`java_tag_count`]), the tags of the oldest snapshots go: all tags of a snapshot at once
/// (without tag callbacks, as Java's `deleteAllTagsOfOneSnapshot`) while that stays above
/// `max`, then the remaining ones of the next snapshot by file modification time (with
/// callbacks) until `max` is reached. Java loops forever when the tags run out first (only
/// possible with a success-file directory and `max` 0); this stops.
async fn trim_batch_tags(table: &Table, max: usize) -> Result<()> {
    let mut count = java_tag_count(table).await?;
    if count <= max {
        return Ok(());
    }
    let statuses = table.branch_io().list_dir(TAG_DIR).await?;
    let mut by_snapshot: BTreeMap<i64, Vec<(i64, String)>> = BTreeMap::new();
    for (name, tag) in table.snapshot_manager().tags().await? {
        let modified = statuses
            .iter()
            .find(|s| s.path.ends_with(&tag_path(&name)))
            .map_or(0, |s| s.last_modified_ms);
        by_snapshot
            .entry(tag.snapshot.id)
            .or_default()
            .push((modified, name));
    }
    for (_, mut names) in by_snapshot {
        if count <= max {
            break;
        }
        if count - names.len() > max {
            for (_, name) in &names {
                delete_tag_with(table, name, Callbacks::Skip).await?;
            }
            count -= names.len();
            continue;
        }
        names.sort();
        for (_, name) in &names {
            delete_tag(table, name).await?;
            count -= 1;
            if count == max {
                break;
            }
        }
        break;
    }
    Ok(())
}

/// What `tag.automatic-creation` asks of committers.
enum AutoTags {
    None,
    /// In the process time zone.
    Batch(Zone),
    Periodic(PeriodicConfig),
}

impl AutoTags {
    /// The configuration of `options`; [`Error::Invalid`] naming the option that is wrong
    /// (Java refuses a `tag.creation-delay` not shorter than the period).
    fn of(options: &Options) -> Result<AutoTags> {
        let spec = |e| Error::from_spec("table options", e);
        let process_zone = || match options.sink_process_time_zone() {
            Some(zone) => Zone::parse(SINK_PROCESS_TIME_ZONE, zone),
            None => Ok(Zone::Local),
        };
        let (watermark, zone) = match options.tag_automatic_creation().map_err(spec)? {
            TagCreationMode::None => return Ok(AutoTags::None),
            TagCreationMode::Batch => return Ok(AutoTags::Batch(process_zone()?)),
            TagCreationMode::ProcessTime => (false, process_zone()?),
            TagCreationMode::Watermark => (
                true,
                Zone::parse(SINK_WATERMARK_TIME_ZONE, options.sink_watermark_time_zone())?,
            ),
        };
        let handler = PeriodHandler::of(options)?;
        let delay: Duration = options.tag_creation_delay().map_err(spec)?;
        let delay = chrono::Duration::from_std(delay)
            .ok()
            .filter(|d| *d < handler.period)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "option 'tag.creation-delay' = {delay:?} must be shorter than the tag period"
                ))
            })?;
        Ok(AutoTags::Periodic(PeriodicConfig {
            watermark,
            zone,
            handler,
            delay,
            completion: options.tag_automatic_completion().map_err(spec)?,
            num_retained_max: options.tag_num_retained_max().map_err(spec)?,
        }))
    }
}

/// Check the automatic-tag options of a table before committing to it, so a bad one fails
/// the commit instead of the tagging after it.
pub fn check_options(options: &Options) -> Result<()> {
    AutoTags::of(options).map(|_| ())
}

/// Create (and trim) the automatic tags `table`'s options ask for after a commit that created
/// snapshots `ids`; returns the names created. Batch tags are made only when the commit
/// created a snapshot.
pub async fn create_auto_tags(table: &Table, ids: &[i64]) -> Result<Vec<String>> {
    let options = table.schema().options();
    match AutoTags::of(options)? {
        AutoTags::None => Ok(Vec::new()),
        AutoTags::Batch(_) if ids.is_empty() => Ok(Vec::new()),
        AutoTags::Batch(zone) => create_batch(table, options, zone).await,
        AutoTags::Periodic(config) => create_periodic(table, &config).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handler(pairs: &[(&str, &str)]) -> PeriodHandler {
        let mut options = Options::new();
        for (k, v) in pairs {
            options.set(*k, *v);
        }
        PeriodHandler::of(&options).expect("valid options")
    }

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").expect("valid time")
    }

    #[test]
    fn names_follow_period_and_formatter() {
        let t = at("2024-05-14 03:00:00");
        let cases = [
            (vec![], "2024-05-14"),
            (vec![("tag.period-formatter", "without_dashes")], "20240514"),
            (vec![("tag.creation-period", "hourly")], "2024-05-14 03"),
            (
                vec![
                    ("tag.creation-period", "hourly"),
                    ("tag.period-formatter", "without_dashes"),
                ],
                "20240514 03",
            ),
            (
                vec![
                    ("tag.creation-period", "hourly"),
                    ("tag.period-formatter", "without_dashes_and_spaces"),
                ],
                "2024051403",
            ),
            (vec![("tag.creation-period", "two-hours")], "2024-05-14 03"),
            (
                vec![("tag.creation-period-duration", "30 min")],
                "202405140300",
            ),
        ];
        for (pairs, name) in cases {
            let h = handler(&pairs);
            assert_eq!(h.name(t), name, "{pairs:?}");
            let start = if h.daily {
                at("2024-05-14 00:00:00")
            } else {
                t
            };
            assert_eq!(h.time_of(name), Some(start), "{pairs:?}");
        }
    }

    #[test]
    fn only_names_of_the_format_are_automatic() {
        let daily = handler(&[]);
        assert!(daily.time_of("2024-05-14 anything").is_some());
        for name in [
            "2024-5-14",
            "2024-05-14x",
            "my-tag",
            "2024-02-30",
            "20240514",
        ] {
            assert_eq!(daily.time_of(name), None, "{name}");
        }
        let hourly = handler(&[("tag.creation-period", "hourly")]);
        assert_eq!(hourly.time_of("2024-05-14"), None);
        assert_eq!(hourly.time_of("2024-05-14 24"), None);
    }

    #[test]
    fn a_time_is_tagged_with_the_period_before_its_own() {
        let daily = handler(&[]);
        assert_eq!(
            daily.previous_period(at("2024-05-14 10:30:00")),
            Some(at("2024-05-13 00:00:00"))
        );
        assert_eq!(
            daily.previous_period(at("2024-05-14 00:00:00")),
            Some(at("2024-05-13 00:00:00"))
        );
        let two = handler(&[("tag.creation-period", "two-hours")]);
        assert_eq!(
            two.previous_period(at("2024-05-14 03:59:00")),
            Some(at("2024-05-14 00:00:00"))
        );
        let minutes = handler(&[("tag.creation-period-duration", "45 min")]);
        // Aligned on the epoch: 2024-05-14 00:00 is 28 594 080 minutes, a multiple of 45.
        assert_eq!(
            minutes.previous_period(at("2024-05-14 01:00:00")),
            Some(at("2024-05-14 00:00:00"))
        );
        assert_eq!(
            daily.next_period(at("2024-05-13 00:00:00")),
            Some(at("2024-05-14 00:00:00"))
        );
    }
}
