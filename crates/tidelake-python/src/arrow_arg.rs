//! Arrow schemas and fields passed from Python, their nesting bounded before they are imported.
//!
//! Importing through the C data interface recurses once per nesting level (arrow-rs, then the
//! engine's type conversion), so a type nested thousands of levels deep would overflow the
//! stack and kill the interpreter. The C structs are walked iteratively first, and a type
//! nested deeper than the engine accepts ([`MAX_NESTING_DEPTH`]) is refused as a bad argument;
//! the engine then checks the exact depth of what it converts.
//!
//! The C data interface also carries names as C strings, so a name containing NUL would
//! arrive silently truncated: names are checked on the Python objects (pyarrow schemas,
//! fields and types) before the export.

use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{FieldRef, SchemaRef};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use pyo3_arrow::{PyField, PySchema};
use tidelake_core::api::Error;
use tidelake_spec::arrow::MAX_NESTING_DEPTH;

use crate::errors::to_py;

/// At most this many C-interface levels per nesting level (a MAP is `map` → `entries` →
/// key, value), plus the schema's own struct level.
const MAX_C_DEPTH: usize = 2 * MAX_NESTING_DEPTH + 1;

/// A `pyarrow.Schema` (or any `__arrow_c_schema__` exporter) with bounded nesting.
pub struct SchemaArg(pub SchemaRef);

/// A `pyarrow.Field` with bounded nesting.
pub struct FieldArg(pub FieldRef);

/// The exported C schema of `ob`, checked to nest at most [`MAX_C_DEPTH`] levels.
fn bounded_capsule<'py>(ob: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyCapsule>> {
    let capsule = ob
        .call_method0(intern!(ob.py(), "__arrow_c_schema__"))?
        .cast_into::<PyCapsule>()?;
    let ptr = capsule
        .pointer_checked(Some(c"arrow_schema"))?
        .cast::<FFI_ArrowSchema>();
    // SAFETY: a valid "arrow_schema" capsule holds an FFI_ArrowSchema that lives as long as
    // the capsule, which outlives this walk.
    let root = unsafe { ptr.as_ref() };
    let mut pending = vec![(root, 0usize)];
    while let Some((schema, depth)) = pending.pop() {
        if depth > MAX_C_DEPTH {
            return Err(to_py(Error::invalid(format!(
                "the Arrow type is nested too deeply: at most {MAX_NESTING_DEPTH} levels of list, map and struct are supported"
            ))));
        }
        pending.extend(
            schema
                .children()
                .chain(schema.dictionary())
                .map(|c| (c, depth + 1)),
        );
    }
    Ok(capsule)
}

/// Refuse a NUL in the name of `ob` (a pyarrow schema or field) or of any field nested in it.
/// Runs after [`bounded_capsule`], so the walk is bounded; objects that are not pyarrow-like
/// (no `field()`/`num_fields`) are left to the engine.
fn check_names(ob: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = ob.py();
    let mut fields: Vec<Bound<'_, PyAny>> = Vec::new();
    if ob.hasattr(intern!(py, "type"))? {
        fields.push(ob.clone());
    } else if ob.hasattr(intern!(py, "field"))? {
        for i in 0..ob.len()? {
            fields.push(ob.call_method1(intern!(py, "field"), (i,))?);
        }
    }
    while let Some(field) = fields.pop() {
        let name: String = field.getattr(intern!(py, "name"))?.extract()?;
        if name.contains('\0') {
            return Err(to_py(Error::invalid(format!(
                "field name {name:?} contains a NUL character"
            ))));
        }
        let mut data_type = field.getattr(intern!(py, "type"))?;
        // Dictionaries: the value type holds the nesting.
        while let Ok(value) = data_type.getattr(intern!(py, "value_type")) {
            if data_type.hasattr(intern!(py, "index_type"))? {
                data_type = value;
            } else {
                break;
            }
        }
        let nested: usize = match data_type.getattr(intern!(py, "num_fields")) {
            Ok(n) => n.extract()?,
            Err(_) => 0,
        };
        for i in 0..nested {
            fields.push(data_type.call_method1(intern!(py, "field"), (i,))?);
        }
    }
    Ok(())
}

/// Import the C schema `ob` exports with `import`, once its depth and names are checked.
fn import_checked<T>(
    ob: &Bound<'_, PyAny>,
    import: impl FnOnce(&Bound<'_, PyCapsule>) -> PyResult<T>,
) -> PyResult<T> {
    let capsule = bounded_capsule(ob)?;
    check_names(ob)?;
    import(&capsule)
}

impl<'py> FromPyObject<'_, 'py> for SchemaArg {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        import_checked(&ob, |c| {
            Ok(SchemaArg(PySchema::from_arrow_pycapsule(c)?.into_inner()))
        })
    }
}

impl<'py> FromPyObject<'_, 'py> for FieldArg {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        import_checked(&ob, |c| {
            Ok(FieldArg(PyField::from_arrow_pycapsule(c)?.into_inner()))
        })
    }
}
