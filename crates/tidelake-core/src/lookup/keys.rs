//! The keys of one lookup: the caller's key rows checked against the table's primary key, cast
//! to its types, deduplicated (first occurrence wins) and decoded per key.
//!
//! Invariants: the key columns are exactly the primary key's (any order in, primary-key order
//! kept); no key value is null; keys compare and encode in Paimon's key order
//! ([`KeyCodec`]), so a result row is matched to its key by its encoded key.

use std::collections::HashMap;

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_cast::{cast_with_options, CastOptions};
use tidelake_spec::datum::Datum;
use tidelake_spec::schema::TableSchema;
use tidelake_spec::types::DataField;

use crate::datum_arrow::{arrow_type_of, datum_at};
use crate::error::{Error, Result};
use crate::lsm::key::KeyCodec;

/// Distinct keys in input order.
pub(crate) struct LookupKeys {
    /// The primary-key fields, in primary-key order.
    pub fields: Vec<DataField>,
    /// One array per primary-key column: the distinct keys, of the columns' read types.
    pub columns: Vec<ArrayRef>,
    /// Per distinct key: its values in primary-key order.
    pub values: Vec<Vec<Datum>>,
    codec: KeyCodec,
}

impl LookupKeys {
    /// The keys of `keys`, whose columns must be `schema`'s primary-key columns.
    pub fn new(schema: &TableSchema, keys: &RecordBatch) -> Result<LookupKeys> {
        if schema.primary_keys.is_empty() {
            return Err(Error::invalid(
                "lookup needs a table with a primary key; this table has none (filter a scan \
                 instead)",
            ));
        }
        let names: Vec<&str> = keys
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        let missing: Vec<&str> = schema
            .primary_keys
            .iter()
            .map(String::as_str)
            .filter(|k| !names.contains(k))
            .collect();
        let extra: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !schema.primary_keys.iter().any(|k| k == n))
            .collect();
        if !missing.is_empty() || !extra.is_empty() || names.len() != schema.primary_keys.len() {
            return Err(Error::invalid(format!(
                "lookup keys must have exactly the primary-key columns [{}]; got [{}]",
                schema.primary_keys.join(", "),
                names.join(", ")
            )));
        }
        let fields: Vec<DataField> = schema
            .primary_keys
            .iter()
            .map(|k| {
                schema
                    .field(k)
                    .cloned()
                    .ok_or_else(|| Error::invalid(format!("primary key '{k}' is not a column")))
            })
            .collect::<Result<_>>()?;
        let options = CastOptions {
            safe: false,
            ..Default::default()
        };
        let mut columns = Vec::with_capacity(fields.len());
        for f in &fields {
            let given = keys.column_by_name(&f.name).expect("checked above");
            let ty = arrow_type_of(&f.data_type)?;
            let cast = cast_with_options(given, &ty, &options).map_err(|e| {
                Error::invalid(format!(
                    "lookup key column '{}' ({}) cannot be read as {}: {e}",
                    f.name,
                    given.data_type(),
                    f.data_type
                ))
            })?;
            if cast.null_count() > 0 {
                return Err(Error::invalid(format!(
                    "lookup key column '{}' holds a null: primary keys are never null",
                    f.name
                )));
            }
            columns.push(cast);
        }
        let codec = KeyCodec::new(columns.iter().map(|c| c.data_type().clone()).collect())?;
        let rows = codec.encode(&columns)?;
        let mut seen = HashMap::with_capacity(rows.num_rows());
        let mut first = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            if seen.insert(row.as_ref().to_vec(), ()).is_none() {
                first.push(i as u32);
            }
        }
        if first.len() != rows.num_rows() {
            let indices = UInt32Array::from(first);
            columns = columns
                .iter()
                .map(|c| arrow_select::take::take(c, &indices, None))
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| Error::arrow("deduplicating lookup keys", e))?;
        }
        let rows = columns.first().map_or(0, |c| c.len());
        let values = (0..rows)
            .map(|r| {
                columns
                    .iter()
                    .zip(&fields)
                    .map(|(c, f)| datum_at(c.as_ref(), r, &f.data_type))
                    .collect::<Result<Vec<Datum>>>()
            })
            .collect::<Result<_>>()?;
        Ok(LookupKeys {
            fields,
            columns,
            values,
            codec,
        })
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// The positions (in primary-key order) of the columns named `names`.
    pub fn positions(&self, names: &[String]) -> Vec<usize> {
        names
            .iter()
            .filter_map(|n| self.fields.iter().position(|f| &f.name == n))
            .collect()
    }

    /// The columns at `positions` of the keys at `keys` (indices into the distinct keys).
    pub fn take(&self, positions: &[usize], keys: &[u32]) -> Result<Vec<ArrayRef>> {
        let indices = UInt32Array::from(keys.to_vec());
        positions
            .iter()
            .map(|&p| {
                arrow_select::take::take(&self.columns[p], &indices, None)
                    .map_err(|e| Error::arrow("selecting lookup keys", e))
            })
            .collect()
    }

    /// The rows of `rows` (which hold the primary-key columns) in the order of the keys, one
    /// per key found; keys without a row are left out.
    pub fn order(&self, rows: &RecordBatch) -> Result<UInt32Array> {
        let columns = self
            .fields
            .iter()
            .zip(&self.columns)
            .map(|(f, key)| {
                let c = rows.column_by_name(&f.name).ok_or_else(|| {
                    Error::invalid(format!("key column '{}' is not in the rows read", f.name))
                })?;
                arrow_cast::cast(c, key.data_type()).map_err(|e| Error::arrow("key column", e))
            })
            .collect::<Result<Vec<_>>>()?;
        let found = self.codec.encode(&columns)?;
        let mut by_key: HashMap<&[u8], u32> = HashMap::with_capacity(found.num_rows());
        for (i, row) in found.iter().enumerate() {
            by_key.insert(row.data(), i as u32);
        }
        let wanted = self.codec.encode(&self.columns)?;
        Ok(wanted
            .iter()
            .filter_map(|row| by_key.get(row.as_ref()).copied())
            .collect::<Vec<u32>>()
            .into())
    }
}
