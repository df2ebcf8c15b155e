//! "Mend, then apply the schema", put together once for `args --schema` (the filter) and the
//! packages' `schema` option ([`crate::MendedValue::with_schema`]).

use crate::args::Mended;
use crate::error::Error;
use crate::repair::Repair;
use crate::tools::schema::{Schema, Violation};

/// A value that breaks its schema: the `invalid_parameters` error, and each violation.
#[derive(Debug, Clone)]
pub struct SchemaMismatch {
    /// `invalid_parameters`, naming every violation.
    pub error: Error,
    /// Each violation, with its JSON pointer and keyword.
    pub violations: Vec<Violation>,
}

/// The mended value checked against `schema` and coerced to it unless `coerce` is false, as
/// compact JSON, with its repairs: the mend's, then the coercions (`schema_type`).
///
/// # Errors
/// The violations left, with their `invalid_parameters` error.
pub(crate) fn apply_schema(
    mended: &Mended<'_>,
    schema: &Schema,
    coerce: bool,
) -> Result<(String, Vec<Repair>), SchemaMismatch> {
    let mut repairs = mended.repairs().to_vec();
    match schema.apply_mended(mended, coerce) {
        Ok(Some((coerced, coercions))) => {
            repairs.extend(coercions);
            Ok((coerced, repairs))
        }
        Ok(None) => Ok((mended.value().into_owned(), repairs)),
        Err(violations) => Err(SchemaMismatch {
            error: Schema::mismatch(&violations),
            violations,
        }),
    }
}
