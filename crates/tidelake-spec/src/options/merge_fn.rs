//! Options of the merge functions (Java `CoreOptions` field options and
//! `PartialUpdateMergeFunction`'s sequence-group keys): which aggregate function a column gets,
//! its per-column settings and the partial-update sequence groups.
//!
//! Lists follow Java: `a,b` splits on `,` minus trailing empty pieces (`String.split`); the
//! lists Java trims (`nested-key`, `nested-sequence-field`) are trimmed here too, the others
//! (sequence-group names, `remove-record-on-sequence-group`) are not.

use std::str::FromStr;

use super::{java_split, java_trim, or_default, Options};
use crate::error::{Error, Result};

pub const PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP: &str =
    "partial-update.remove-record-on-sequence-group";
const FIELDS_PREFIX: &str = "fields";
const SEQUENCE_GROUP: &str = "sequence-group";

/// `fields.<f>.nested-key-null-strategy`: what to do with nested rows whose key has a null.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NestedKeyNullStrategy {
    /// Merge them like any other key (default).
    Merge,
    /// Drop them.
    Ignore,
    /// Fail.
    Error,
}

option_enum!(NestedKeyNullStrategy, "fields.<field-name>.nested-key-null-strategy", {
    Merge => "merge",
    Ignore => "ignore",
    Error => "error",
});

/// One `fields.<s1>,<s2>.sequence-group = <f1>,<f2>` option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceGroupOption {
    /// The option key (for messages).
    pub key: String,
    /// `<s1>,<s2>`: the group's sequence fields, in option order.
    pub sequence_fields: Vec<String>,
    /// `<f1>,<f2>`: the columns the group protects.
    pub protected_fields: Vec<String>,
}

/// Java `String.split(",")` then `String.trim()` on each piece.
fn trimmed_list(value: &str) -> Vec<String> {
    java_split(value)
        .into_iter()
        .map(|s| java_trim(s).to_string())
        .collect()
}

fn untrimmed_list(value: &str) -> Vec<String> {
    java_split(value).into_iter().map(str::to_string).collect()
}

impl Options {
    fn field_option(&self, column: &str, name: &str) -> Option<&str> {
        self.get(&format!("{FIELDS_PREFIX}.{column}.{name}"))
    }

    /// `fields.<column>.distinct` (listagg, collect), default false.
    pub fn field_distinct(&self, column: &str) -> Result<bool> {
        or_default(
            self.get_bool(&format!("{FIELDS_PREFIX}.{column}.distinct")),
            false,
        )
    }

    /// `fields.<column>.list-agg-delimiter`, default `,`.
    pub fn field_list_agg_delimiter(&self, column: &str) -> &str {
        self.field_option(column, "list-agg-delimiter")
            .unwrap_or(",")
    }

    /// `fields.<column>.ts-field` of `merge_map_with_keytime`, if set.
    pub fn field_merge_map_ts_field(&self, column: &str) -> Option<&str> {
        self.field_option(column, "ts-field")
    }

    /// `fields.<column>.nested-key`, trimmed names; empty when unset.
    pub fn field_nested_key(&self, column: &str) -> Vec<String> {
        self.field_option(column, "nested-key")
            .map(trimmed_list)
            .unwrap_or_default()
    }

    /// `fields.<column>.nested-sequence-field`, trimmed names; empty when unset.
    pub fn field_nested_sequence_field(&self, column: &str) -> Vec<String> {
        self.field_option(column, "nested-sequence-field")
            .map(trimmed_list)
            .unwrap_or_default()
    }

    /// `fields.<column>.nested-key-null-strategy`; `None` when unset (Java's default is
    /// `merge`, but `nested_update` rejects the key without a `nested-key`).
    pub fn field_nested_key_null_strategy(
        &self,
        column: &str,
    ) -> Result<Option<NestedKeyNullStrategy>> {
        self.field_option(column, "nested-key-null-strategy")
            .map(|v| java_trim(v).parse())
            .transpose()
    }

    /// `fields.<column>.count-limit` of `nested_update`, default `i32::MAX`; never negative.
    pub fn field_count_limit(&self, column: &str) -> Result<usize> {
        let key = format!("{FIELDS_PREFIX}.{column}.count-limit");
        let limit = or_default(self.get_i32(&key), i32::MAX)?;
        usize::try_from(limit).map_err(|_| {
            Error::Invalid(format!(
                "option '{key}' = '{limit}': a count cannot be negative"
            ))
        })
    }

    /// `partial-update.remove-record-on-sequence-group`, split on `,`; `None` when unset.
    pub fn partial_update_remove_record_on_sequence_group(&self) -> Option<Vec<String>> {
        self.get(PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP)
            .map(untrimmed_list)
    }

    /// The `fields.<s1>,<s2>.sequence-group` options in option order (Java
    /// `isSequenceGroupOptionCandidate`: any key starting with `fields` and ending with
    /// `sequence-group`; a candidate not of the `fields.<names>.sequence-group` form is invalid).
    pub fn sequence_groups(&self) -> Result<Vec<SequenceGroupOption>> {
        self.iter()
            .filter(|(key, _)| key.starts_with(FIELDS_PREFIX) && key.ends_with(SEQUENCE_GROUP))
            .map(|(key, value)| {
                let names = key
                    .strip_prefix("fields.")
                    .and_then(|k| k.strip_suffix(".sequence-group"))
                    .ok_or_else(|| {
                        Error::Invalid(format!("invalid sequence-group option: {key}"))
                    })?;
                Ok(SequenceGroupOption {
                    key: key.to_string(),
                    sequence_fields: untrimmed_list(names),
                    protected_fields: untrimmed_list(value),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::tests::opts;

    #[test]
    fn field_options_defaults_and_java_lists() {
        let o = opts(&[
            ("fields.a.nested-key", " k1 , k2 ,"),
            ("fields.a.nested-key-null-strategy", "IGNORE"),
            ("fields.a.count-limit", "3"),
            ("fields.b.count-limit", "-1"),
            ("fields.a.distinct", "True"),
            ("fields.a.list-agg-delimiter", ";"),
        ]);
        assert_eq!(o.field_nested_key("a"), vec!["k1", "k2"]);
        assert!(o.field_nested_key("b").is_empty());
        assert!(o.field_nested_sequence_field("a").is_empty());
        assert_eq!(
            o.field_nested_key_null_strategy("a").unwrap(),
            Some(NestedKeyNullStrategy::Ignore)
        );
        assert_eq!(o.field_nested_key_null_strategy("b").unwrap(), None);
        assert_eq!(o.field_count_limit("a").unwrap(), 3);
        assert!(o
            .field_count_limit("b")
            .unwrap_err()
            .to_string()
            .contains("fields.b.count-limit"));
        assert_eq!(o.field_count_limit("c").unwrap(), i32::MAX as usize);
        assert!(o.field_distinct("a").unwrap());
        assert!(!o.field_distinct("b").unwrap());
        assert_eq!(o.field_list_agg_delimiter("a"), ";");
        assert_eq!(o.field_list_agg_delimiter("b"), ",");
        let bad = opts(&[("fields.a.nested-key-null-strategy", "drop")]);
        assert!(bad.field_nested_key_null_strategy("a").is_err());
    }

    #[test]
    fn sequence_groups_split_like_java() {
        let o = opts(&[
            ("fields.s1,s2.sequence-group", "a,b,"),
            ("fields.x.aggregate-function", "sum"),
            ("partial-update.remove-record-on-sequence-group", "s1,"),
        ]);
        let groups = o.sequence_groups().unwrap();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].sequence_fields, vec!["s1", "s2"]);
        assert_eq!(groups[0].protected_fields, vec!["a", "b"]);
        assert_eq!(
            o.partial_update_remove_record_on_sequence_group(),
            Some(vec!["s1".to_string()])
        );
        let bad = opts(&[("fields-sequence-group", "a")]);
        assert!(bad
            .sequence_groups()
            .unwrap_err()
            .to_string()
            .contains("fields-sequence-group"));
    }
}
