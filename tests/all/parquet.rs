//! `orrery run --format parquet`: every table a run writes has a Parquet twin with the same
//! columns and, cell for cell, the same values (text, whole numbers and floats bit for bit,
//! empty cells as nulls), the schema version and run header in its metadata, one type per
//! column whatever the values, and byte-identical reruns.

use std::path::{Path, PathBuf};
use std::process::Command;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

fn run(scenario: &str, out: &Path, format: &str) {
    let o = Command::new(env!("CARGO_BIN_EXE_orrery"))
        .args(["run", scenario, "--no-plots", "--format", format, "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("orrery-parquet-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Check `pq` against `csv` cell by cell; returns the file's key-value metadata.
fn same_table(csv: &Path, pq: &Path) -> Vec<(String, String)> {
    let rows = orrery::csv::records(&std::fs::read_to_string(csv).unwrap());
    let r = SerializedFileReader::new(std::fs::File::open(pq).unwrap()).unwrap();
    let meta = r.metadata().file_metadata();
    let names: Vec<&str> = meta
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name())
        .collect();
    assert_eq!(names, rows[0], "{}", pq.display());
    assert_eq!(meta.num_rows() as usize, rows.len() - 1, "{}", pq.display());
    for (i, got) in r.get_row_iter(None).unwrap().enumerate() {
        let got = got.unwrap();
        let want = &rows[i + 1];
        for (c, (name, f)) in got.get_column_iter().enumerate() {
            let cell = want.get(c).map_or("", String::as_str);
            let ok = match f {
                Field::Null => cell.is_empty(),
                Field::Str(s) => s == cell,
                Field::Long(v) => cell.parse::<i64>() == Ok(*v),
                Field::Double(v) => cell.parse::<f64>().map(f64::to_bits) == Ok(v.to_bits()),
                _ => false,
            };
            assert!(
                ok,
                "{} row {} column {name}: {f:?} vs {cell:?}",
                pq.display(),
                i + 2
            );
        }
    }
    meta.key_value_metadata()
        .into_iter()
        .flatten()
        .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn every_table_has_a_parquet_twin_with_the_same_cells() {
    for scenario in ["scenarios/quickstart.orr", "scenarios/mixed_inference.orr"] {
        let stem = Path::new(scenario).file_stem().unwrap().to_str().unwrap();
        let (c, p) = (dir(&format!("{stem}-csv")), dir(&format!("{stem}-pq")));
        run(scenario, &c, "csv");
        run(scenario, &p, "parquet");
        let mut tables = 0;
        for e in std::fs::read_dir(&c).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "csv") {
                let twin = p.join(path.with_extension("parquet").file_name().unwrap());
                let kv = same_table(&path, &twin);
                let get = |k: &str| kv.iter().find(|(x, _)| x == k).map(|(_, v)| v.as_str());
                assert_eq!(
                    get("orrery.schema_version"),
                    Some(orrery::report::RUN_SCHEMA_VERSION.to_string().as_str())
                );
                assert_eq!(get("orrery.seed"), Some("1"));
                assert_eq!(get("orrery.scenario"), Some(scenario));
                assert!(
                    !p.join(path.file_name().unwrap()).exists(),
                    "no CSV beside the Parquet"
                );
                tables += 1;
            }
        }
        assert!(tables >= 7, "{scenario}: {tables} tables");
        // run.json and report.md are written either way; report.md names the Parquet files.
        assert!(p.join("run.json").exists());
        let report = std::fs::read_to_string(p.join("report.md")).unwrap();
        assert!(report.contains("tasks.parquet"), "{report}");
        // Reruns are byte-identical.
        let again = dir(&format!("{stem}-pq2"));
        run(scenario, &again, "parquet");
        for t in ["tasks", "utilization", "timeline"] {
            let f = format!("{t}.parquet");
            if p.join(&f).exists() {
                assert_eq!(
                    std::fs::read(p.join(&f)).unwrap(),
                    std::fs::read(again.join(&f)).unwrap(),
                    "{f}"
                );
            }
        }
        for d in [c, p, again] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

#[test]
fn a_column_has_one_type_whatever_its_values() {
    use orrery::report::columnar::{Column, column_type};
    // Whole-number seconds are still floats; counts are integers; names are text.
    let csv = "orrery,scenario_hash,seed,workload,submitted,queue_mean_s,option_index\n0.1.0,ab,1,w,3,2,\n";
    let b = orrery::report::columnar::to_parquet("tasks.csv", csv, &[]).unwrap();
    let f = tempfile::tempfile().unwrap();
    std::io::Write::write_all(&mut &f, &b).unwrap();
    let r = SerializedFileReader::new(f).unwrap();
    let row = r.get_row_iter(None).unwrap().next().unwrap().unwrap();
    let fields: Vec<String> = row
        .get_column_iter()
        .map(|(_, f)| format!("{f:?}"))
        .collect();
    assert_eq!(fields[4], "Long(3)");
    assert_eq!(fields[5], "Double(2.0)");
    assert_eq!(fields[6], "Null");
    assert_eq!(column_type("placement_groups.csv", "nodes"), Column::Text);
    assert_eq!(column_type("training.csv", "nodes"), Column::Int);
    // A cell its column cannot hold names the column and row.
    let e =
        orrery::report::columnar::to_parquet("tasks.csv", "submitted\nmany\n", &[]).unwrap_err();
    assert!(e.contains("column `submitted` row 2"), "{e}");
}
