//! Parquet copies of a run's CSV tables (`orrery run --format parquet`): the same columns in
//! the same order, each with one declared type, so a table reads the same way into pandas or
//! Polars from either file.
//!
//! A table is converted from the CSV text the run writes, so the two can never disagree. Each
//! column's type comes from [`column_type`] (text, a whole number, or a float), never from the
//! values: a column that happens to hold whole numbers in one run is still a float in the
//! next. An empty CSV cell is a null. Files are uncompressed (the `parquet` crate is built
//! without codecs), one row group, and carry key-value metadata: `orrery.schema_version`
//! ([`super::RUN_SCHEMA_VERSION`], the version of run.json), `orrery.table`, and the
//! run's header (`orrery.version`, `orrery.scenario`, `orrery.scenario_hash`, `orrery.seed`).
//! The bytes depend only on the table and the header (`created_by` is fixed), so the same
//! scenario and seed give byte-identical files.

use std::sync::Arc;

use parquet::basic::{LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

/// A column's type in the Parquet file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Text,
    Int,
    Float,
}

/// Columns holding text in a run's tables (in every table that has them).
const TEXT: &[&str] = &[
    "orrery",
    "scenario_hash",
    "workload",
    "group",
    "job",
    "service",
    "model",
    "state",
    "domain",
    "link_class",
    "scope",
    "name",
    "node",
    "kind",
    "kv_transport",
];

/// Columns holding whole numbers (counts, seeds, indices).
const INT: &[&str] = &[
    "seed",
    "submitted",
    "completed",
    "infeasible",
    "bundles",
    "attempts",
    "racks",
    "option_index",
    "devices",
    "steps_done",
    "replicas",
    "arrived",
    "served",
    "finished",
    "preemptions",
    "tp",
    "prefill_replicas",
    "decode_replicas",
    "links",
];

/// The type of column `name` of `table` (a run's CSV file name).
pub fn column_type(table: &str, name: &str) -> Column {
    // The timeline's first column names what a row is (a device, node or node type).
    if table == "timeline.csv" {
        return if name == "start_s" || name == "end_s" {
            Column::Float
        } else {
            Column::Text
        };
    }
    // `nodes` lists node names in placement_groups.csv and counts them in training.csv.
    if name == "nodes" {
        return if table == "placement_groups.csv" {
            Column::Text
        } else {
            Column::Int
        };
    }
    if TEXT.contains(&name) {
        Column::Text
    } else if INT.contains(&name) {
        Column::Int
    } else {
        Column::Float
    }
}

/// The CSV text `csv` of table `table` as a Parquet file, with `meta` added to its key-value
/// metadata. An error names the table, column and row of a cell its column's type cannot
/// hold (a bug in [`column_type`], not in the input: the run wrote the CSV).
pub fn to_parquet(table: &str, csv: &str, meta: &[(&str, String)]) -> Result<Vec<u8>, String> {
    let rows = crate::csv::records(csv);
    let Some((header, body)) = rows.split_first() else {
        return Err(format!("{table}: no header row"));
    };
    let types: Vec<Column> = header.iter().map(|h| column_type(table, h)).collect();
    let fields = header
        .iter()
        .zip(&types)
        .map(|(h, t)| {
            let b = match t {
                Column::Text => Type::primitive_type_builder(h, Physical::BYTE_ARRAY)
                    .with_logical_type(Some(LogicalType::String)),
                Column::Int => Type::primitive_type_builder(h, Physical::INT64),
                Column::Float => Type::primitive_type_builder(h, Physical::DOUBLE),
            };
            b.with_repetition(Repetition::OPTIONAL)
                .build()
                .map(Arc::new)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{table}: {e}"))?;
    let schema = Type::group_type_builder("schema")
        .with_fields(fields)
        .build()
        .map_err(|e| format!("{table}: {e}"))?;
    let mut kv = vec![
        KeyValue::new(
            "orrery.schema_version".into(),
            super::RUN_SCHEMA_VERSION.to_string(),
        ),
        KeyValue::new(
            "orrery.table".into(),
            table.trim_end_matches(".csv").to_string(),
        ),
    ];
    kv.extend(
        meta.iter()
            .map(|(k, v)| KeyValue::new(k.to_string(), v.clone())),
    );
    let props = WriterProperties::builder()
        .set_created_by(format!("orrery {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(kv))
        .build();
    let err = |e: parquet::errors::ParquetError| format!("{table}: {e}");
    let mut buf = Vec::new();
    let mut w =
        SerializedFileWriter::new(&mut buf, Arc::new(schema), Arc::new(props)).map_err(err)?;
    let mut rg = w.next_row_group().map_err(err)?;
    let mut c = 0;
    while let Some(mut col) = rg.next_column().map_err(err)? {
        let cells = body.iter().map(|r| r.get(c).map_or("", String::as_str));
        let defs: Vec<i16> = cells.clone().map(|s| i16::from(!s.is_empty())).collect();
        let present = cells.enumerate().filter(|(_, s)| !s.is_empty());
        let bad = |row: usize| {
            format!(
                "{table}: column `{}` row {}: not a {:?}",
                header[c],
                row + 2,
                types[c]
            )
        };
        match types[c] {
            Column::Text => {
                let v: Vec<ByteArray> = present.map(|(_, s)| ByteArray::from(s)).collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&v, Some(&defs), None)
                    .map_err(err)?;
            }
            Column::Int => {
                let v = parsed::<i64>(present, bad)?;
                col.typed::<Int64Type>()
                    .write_batch(&v, Some(&defs), None)
                    .map_err(err)?;
            }
            Column::Float => {
                let v = parsed::<f64>(present, bad)?;
                col.typed::<DoubleType>()
                    .write_batch(&v, Some(&defs), None)
                    .map_err(err)?;
            }
        }
        col.close().map_err(err)?;
        c += 1;
    }
    rg.close().map_err(err)?;
    w.close().map_err(err)?;
    Ok(buf)
}

/// The present cells of a column, as numbers; `bad(row)` for the first that is not one.
fn parsed<'a, T: std::str::FromStr>(
    cells: impl Iterator<Item = (usize, &'a str)>,
    bad: impl Fn(usize) -> String,
) -> Result<Vec<T>, String> {
    cells
        .map(|(i, s)| s.parse::<T>().map_err(|_| bad(i)))
        .collect()
}
