//! `orrery._native`: the Rust core as Python sees it. Deliberately thin: every simulating call
//! goes through [`orrery::cli::run_captured`], the very code the `orrery` binary runs, so a
//! Python result and a CLI result of the same scenario and seed are the same bytes. The Python
//! side (python/orrery/) turns the files a command wrote into DataFrames.
//!
//! Architecture invariant: nothing here simulates, prices or formats results on its own.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// Runs `orrery ARGS...` in this process, with the GIL released: (exit status, standard
/// output, standard error), exactly what the binary would give. Calls take turns.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> (u8, String, String) {
    py.detach(|| orrery::cli::run_captured(std::iter::once("orrery".to_string()).chain(args)))
}

/// Runs `f`; a panic in it comes back as an ordinary `RuntimeError` naming `what`, never as
/// pyo3's PanicException, which `except Exception` does not catch (issue 42). The Python side
/// turns it into `OrreryError` (exit code 101, as the CLI's status for a panic).
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        pyo3::exceptions::PyRuntimeError::new_err(format!(
            "orrery: internal error while loading {what}: {msg}"
        ))
    })
}

/// Panics inside [`guarded`]: python/tests checks with it that a panic in the core reaches
/// Python as an ordinary exception. Nothing else calls it.
#[pyfunction]
fn _panic_for_test() -> PyResult<()> {
    guarded("a test's scenario", || panic!("a panic the test asked for"))
}

/// Loads a scenario from `path`, or from `text` (named `name` in messages), as `orrery check`
/// does; a dict with `ok` (no errors), `hash` (the scenario hash runs print), `diagnostics`
/// (severity, file, line, column, end_line, end_column, message, label, help) and `rendered`
/// (what the CLI prints for them). A file that cannot be read is `ok` False with one
/// diagnostic that has no line.
#[pyfunction]
#[pyo3(signature = (path=None, text=None, name="<text>", allow_infeasible=false))]
fn load<'py>(
    py: Python<'py>,
    path: Option<String>,
    text: Option<String>,
    name: &str,
    allow_infeasible: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = orrery::scenario::LoadOptions { allow_infeasible };
    let out = PyDict::new(py);
    let diags = PyList::empty(py);
    let limit = orrery::files::MAX_INPUT_BYTES;
    let loaded = match (path, text) {
        (Some(p), None) => py.detach(|| {
            guarded(name, || {
                orrery::load_file_with(std::path::Path::new(&p), opts)
            })
        })?,
        // The same bound as a scenario file's: work is bounded before it starts.
        (None, Some(t)) if t.len() as u64 > limit => Err(format!(
            "{name} is larger than the {} MiB limit of a scenario",
            limit >> 20
        )),
        (None, Some(t)) => {
            py.detach(|| guarded(name, || Ok(orrery::load_str_with(name, &t, opts))))?
        }
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "give exactly one of path and text",
            ));
        }
    };
    let l = match loaded {
        Ok(l) => l,
        Err(e) => {
            let d = PyDict::new(py);
            d.set_item("severity", "error")?;
            d.set_item("message", &e)?;
            diags.append(d)?;
            out.set_item("ok", false)?;
            out.set_item("hash", py.None())?;
            out.set_item("diagnostics", diags)?;
            out.set_item("rendered", format!("error: {e}\n"))?;
            return Ok(out);
        }
    };
    for d in &l.diags {
        let x = PyDict::new(py);
        let (line, column) = l.sources.line_col(d.span.file, d.span.start);
        let (end_line, end_column) = l.sources.line_col(d.span.file, d.span.end);
        x.set_item(
            "severity",
            match d.severity {
                orrery::diag::Severity::Error => "error",
                orrery::diag::Severity::Warning => "warning",
                orrery::diag::Severity::Note => "note",
            },
        )?;
        x.set_item("file", &l.sources.file(d.span.file).name)?;
        x.set_item("line", line)?;
        x.set_item("column", column)?;
        x.set_item("end_line", end_line)?;
        x.set_item("end_column", end_column)?;
        x.set_item("message", &d.message)?;
        x.set_item("label", &d.label)?;
        x.set_item("help", d.help.as_deref())?;
        diags.append(x)?;
    }
    out.set_item("ok", !l.has_errors())?;
    out.set_item("hash", orrery::scenario_hash(&l.sources))?;
    out.set_item("diagnostics", diags)?;
    out.set_item("rendered", l.render(false))?;
    Ok(out)
}

/// The declared type of a column of a run's table, as `--format parquet` writes it:
/// "text", "int" or "float".
#[pyfunction]
fn column_type(table: &str, name: &str) -> &'static str {
    match orrery::report::columnar::column_type(table, name) {
        orrery::report::columnar::Column::Text => "text",
        orrery::report::columnar::Column::Int => "int",
        orrery::report::columnar::Column::Float => "float",
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // As the binary: a panic a library is known to raise, caught as an error, prints nothing.
    orrery::quiet::install_hook();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(column_type, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    Ok(())
}
