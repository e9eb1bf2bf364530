"""`import orrery`: results identical to the CLI's, located errors, tables typed as declared."""

import csv
import io
import re

import pandas as pd
import pytest

import orrery
from conftest import same_files

QUICK = "scenarios/quickstart.orr"


def test_run_writes_exactly_what_the_cli_writes(tmp_path, cli_run):
    code, out, err = cli_run("run", QUICK, "--seed", "3", "--policy", "spread", "--out", tmp_path / "cli")
    assert code == 0, err
    s = orrery.load(QUICK)
    r = s.run(seed=3, policy="spread", out=tmp_path / "py")
    names = same_files(tmp_path / "cli", tmp_path / "py")
    assert {"run.json", "tasks.csv", "timeline.png", "report.md"} <= set(names)
    # The simulation's stdout is the CLI's too, but for the wall-clock lines.
    timing = re.compile(r"simulated in|\(\d+\.\d+ s\)")
    strip = lambda t, d: [l.replace(str(tmp_path / d), "OUT") for l in t.splitlines() if not timing.search(l)]
    assert strip(r.stdout, "py") == strip(out, "cli")


def test_tables_are_the_csv_with_declared_types(tmp_path):
    r = orrery.load(QUICK).run(seed=2, out=tmp_path)
    for name in ["tasks", "training", "services", "placement_groups", "utilization", "cpu_utilization", "timeline", "links"]:
        df = getattr(r, name)
        text = (tmp_path / f"{name}.csv").read_text()
        rows = list(csv.reader(io.StringIO(text)))
        assert list(df.columns) == rows[0], name
        assert len(df) == len(rows) - 1, name
        for i, row in enumerate(rows[1:]):
            for col, cell in zip(rows[0], row):
                v = df[col].iloc[i]
                kind = orrery._native.column_type(f"{name}.csv", col)
                if cell == "":
                    assert pd.isna(v), (name, col, i)
                elif kind == "text":
                    assert v == cell
                elif kind == "int":
                    assert int(v) == int(cell)
                else:
                    assert float(v) == float(cell)  # bit for bit: round_trip parsing
    assert str(r.tasks["seed"].dtype) == "Int64"
    assert str(r.tasks["workload"].dtype) == "string"
    assert str(r.tasks["run_max_s"].dtype) == "float64"


def test_header_reproduces_the_run(tmp_path):
    s = orrery.load(QUICK)
    r = s.run(seed=5)
    h = r.header
    assert h["seed"] == 5
    assert h["orrery"] == orrery.__version__
    assert h["scenario_hash"] == s.hash
    assert h["scenario"] == QUICK
    assert any("H100_SXM" in m for m in h["model_sources"])
    assert r.metrics["events"] > 0
    # Reproducible from (scenario hash, seed, version): a second run is the same table.
    pd.testing.assert_frame_equal(r.tasks, s.run(seed=5, plots=False).tasks)
    # The temporary folder is gone; everything was read before.
    assert not r.folder.exists()


def test_plot_is_a_png_jupyter_shows(tmp_path):
    r = orrery.load(QUICK).run(seed=1)
    img = r.plot("timeline")
    assert img._repr_png_().startswith(b"\x89PNG\r\n\x1a\n")
    img.save(tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes() == img.data
    with pytest.raises(KeyError, match="no plot 'nope'"):
        r.plot("nope")
    assert orrery.load(QUICK).run(plots=False).plot_names == []


def test_only_a_complete_runs_listed_files_are_read(tmp_path):
    out = tmp_path / "out"
    r = orrery.load(QUICK).run(seed=1, plots=False, out=out)
    # A file of the user's (or of an earlier run) beside the run's is not the run's.
    (out / "notes.csv").write_text("a,b\n1,2\n")
    again = orrery.RunResult(out, "", "")
    assert again.files == r.files and "notes" not in again.table_names
    # Without the marker a run writes last, the folder holds an incomplete run.
    (out / ".orrery-files").unlink()
    with pytest.raises(orrery.OrreryError, match="incomplete run"):
        orrery.RunResult(out, "", "")


def test_load_errors_carry_the_cli_locations(tmp_path, cli_run):
    bad = tmp_path / "bad.orr"
    bad.write_text(
        "node_type box {\n  cpu 16 cores\n  memory 64 GiB\n  accelerator H100_SXN x 8\n}\n"
        "cluster c {\n  rack r { node n: box x 2 }\n}\n"
    )
    with pytest.raises(orrery.OrreryError) as e:
        orrery.load(bad)
    errors = [d for d in e.value.diagnostics if d.severity == "error"]
    assert errors and e.value.exit_code == 2
    code, _, err = cli_run("check", bad)
    assert code == 2
    # Every error's file:line:column is one the CLI printed for it, with the same message.
    for d in errors:
        assert d.file == str(bad) and d.line >= 1 and d.column >= 1
        assert f"{d.file}:{d.line}:{d.column}" in err
        assert d.message in err
    assert e.value.stderr in err


def test_text_scenarios_and_their_errors():
    text = open(QUICK).read()
    s = orrery.load(text)
    assert s.hash  # a text scenario runs like a file
    assert len(s.run(seed=1, plots=False).tasks) > 0
    with pytest.raises(orrery.OrreryError) as e:
        orrery.load(text.replace("cluster", "clustr", 1), name="mine.orr")
    d = next(d for d in e.value.diagnostics if d.severity == "error")
    assert d.file == "mine.orr" and d.line is not None
    with pytest.raises(orrery.OrreryError) as e:
        orrery.load("missing/nowhere.orr")
    assert "nowhere.orr" in str(e.value)


def test_bad_flags_raise_and_never_end_the_interpreter():
    s = orrery.load(QUICK)
    with pytest.raises(orrery.OrreryError) as e:
        s.run(horizon="soon")
    assert e.value.exit_code == 2 and "--horizon" in e.value.stderr
    with pytest.raises(orrery.OrreryError):
        s.run(failures="no_such_block")
    done = orrery.cli("run", "--bogus-flag")
    assert done.exit_code == 2 and "--bogus-flag" in done.stderr
    assert orrery.cli("--help").exit_code == 0
    assert "Usage" in orrery.cli("--help").stdout


def test_a_panic_in_the_core_is_an_ordinary_exception():
    # A bug in the core panics; pyo3 would raise PanicException, which `except Exception`
    # does not catch. It arrives as OrreryError (exit code 101, the CLI's for a panic).
    from orrery import _native

    with pytest.raises(orrery.OrreryError) as e:
        orrery._native_call(_native._panic_for_test)
    assert e.value.exit_code == 101
    assert "internal error while loading a test's scenario: a panic the test asked for" in str(e.value)
    try:
        orrery._native_call(_native._panic_for_test)
    except Exception:
        pass


def test_sweep_compare_drill_write_what_the_cli_writes(tmp_path, cli_run):
    sw = "scenarios/sweep_fabric.orr"
    assert cli_run("sweep", sw, "--seeds", "2", "--out", tmp_path / "s_cli")[0] == 0
    r = orrery.sweep(sw, seeds=2, out=tmp_path / "s_py")
    same_files(tmp_path / "s_cli", tmp_path / "s_py")
    assert len(r.runs) == 3 * 2 * 2 and len(r.summary) == 3 * 2
    assert r.summary_json["schema_version"] >= 1

    a, b = "scenarios/h100_vs_mi300x/h100.orr", "scenarios/h100_vs_mi300x/mi300x.orr"
    assert cli_run("compare", a, b, "--seeds", "2", "--out", tmp_path / "c_cli")[0] == 0
    c = orrery.compare([a, orrery.load(b)], seeds=range(1, 3), out=tmp_path / "c_py")
    same_files(tmp_path / "c_cli", tmp_path / "c_py")
    assert len(c.comparison) > 0

    assert cli_run("drill", QUICK, "--seeds", "2", "--out", tmp_path / "d_cli")[0] == 0
    d = orrery.drill(QUICK, seeds=2, out=tmp_path / "d_py")
    same_files(tmp_path / "d_cli", tmp_path / "d_py")
    assert len(d.drill) > 0 and d.drill_json


def test_shards_merge_into_the_unsharded_sweep(tmp_path, cli_run):
    sw = "scenarios/sweep_fabric.orr"
    assert cli_run("sweep", sw, "--out", tmp_path / "full")[0] == 0
    for i in range(3):
        orrery.sweep(sw, shard=f"{i}/3", out=tmp_path / f"s{i}")
    m = orrery.merge([tmp_path / f"s{i}" for i in range(3)], tmp_path / "merged")
    same_files(tmp_path / "full", tmp_path / "merged")
    assert len(m.runs) == 18


def test_to_polars_has_the_same_tables():
    pl = pytest.importorskip("polars")
    r = orrery.load(QUICK).run(seed=1, plots=False)
    p = r.to_polars()
    assert set(p) == set(r.table_names)
    assert isinstance(p["tasks"], pl.DataFrame)
    assert p["tasks"].columns == list(r.tasks.columns)
    assert p["tasks"].height == len(r.tasks)
    assert p["tasks"].schema["seed"] == pl.Int64 and p["tasks"].schema["workload"] == pl.String
    # The same values as the pandas table, nulls where it has missing values.
    for name in r.table_names:
        assert p[name].to_dicts() == [
            {k: (None if pd.isna(v) else v) for k, v in row.items()}
            for row in r.table(name).astype(object).to_dict("records")
        ], name


def test_work_budgets_and_windows_reach_the_cli(tmp_path, cli_run):
    s = orrery.load(QUICK)
    code, _, err = cli_run("run", QUICK, "--max-events", "1000", "--out", tmp_path / "cli")
    with pytest.raises(orrery.OrreryError) as e:
        s.run(max_events=1000, out=tmp_path / "py")
    assert (e.value.exit_code, e.value.stderr) == (code, err) and code == 2
    assert not (tmp_path / "py" / "run.json").exists()
    a, b = "scenarios/h100_vs_mi300x/h100.orr", "scenarios/h100_vs_mi300x/mi300x.orr"
    args = ("compare", a, b, "--seeds", "1", "--horizon", "30 min", "--out", tmp_path / "c_cli")
    assert cli_run(*args)[0] == 0
    orrery.compare([a, b], seeds=1, horizon="30 min", out=tmp_path / "c_py")
    same_files(tmp_path / "c_cli", tmp_path / "c_py")


def test_ray_clusters_import_as_the_cli_does(cli_run):
    y = "scenarios/ray_clusters/aws_p5_autoscaler.yaml"
    code, out, err = cli_run("import", "ray-cluster", y, "--workers", "max")
    assert code == 0
    c = orrery.import_ray_cluster(y, workers="max")
    assert c.text == out
    assert c.warnings == []  # every P5, L4 and head node maps whole, NICs included
    k = "scenarios/ray_clusters/kuberay_h100.yaml"
    code, _, err = cli_run("import", "ray-cluster", k)
    w = orrery.import_ray_cluster(k).warnings
    assert [f"{k}:" + x.replace(": ", ": warning: ", 1) for x in w] == [l for l in err.splitlines() if ": warning: " in l]
    assert w and all("`" in x for x in w)
    s = c.load()
    assert s.hash and "node gpu_h100 x 8" in s.text
    with pytest.raises(orrery.OrreryError) as e:
        orrery.import_ray_cluster(k, strict=True)
    assert e.value.exit_code == 2 and "--strict" in e.value.stderr


def test_hostile_sources_are_refused_with_a_reason(tmp_path):
    for source, why in [
        ("", "empty string"),
        ("/dev/zero", "not a regular file"),
        (str(tmp_path), "not a regular file"),
        ("missing/nowhere.orr", "cannot be read"),
        ("x" * (16 << 20) + "\n", "larger than the 16 MiB limit"),
    ]:
        with pytest.raises(orrery.OrreryError) as e:
            orrery.load(source)
        assert why in str(e.value), (source[:20], str(e.value)[:200])
    with pytest.raises(TypeError):
        orrery.load(123)


def test_a_text_scenario_has_no_folder_of_its_own():
    with pytest.raises(orrery.OrreryError) as e:
        orrery.load('include "quickstart.orr"\n', name="inc.orr")
    d = next(d for d in e.value.diagnostics if d.severity == "error")
    assert (d.file, d.line, d.column) == ("inc.orr", 1, 9) and "include" in d.message
    # A profile is found in ./calibration/ (the tests run in the repository root).
    r = orrery.load(open("scenarios/h200_roofline.orr").read()).run(plots=False)
    assert any("h200_datasheet" in m for m in r.header["model_sources"])
    # A trace is named relative to a folder the text does not have.
    s = orrery.load(open("scenarios/llm_trace_replay/replay.orr").read())
    with pytest.raises(orrery.OrreryError) as e:
        s.run(plots=False)
    assert e.value.exit_code == 2 and "conversation.csv cannot be read" in e.value.stderr
