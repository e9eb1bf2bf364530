"""Parquet after `pip install "./python[parquet]"`: the CLI's `--format parquet` files read back
with pandas (through pyarrow, the extra) hold exactly the run's tables."""

import pandas as pd
import pytest

import orrery

QUICK = "scenarios/quickstart.orr"


def test_parquet_files_hold_the_same_tables(tmp_path):
    pytest.importorskip("pyarrow", reason='the parquet extra: pip install "./python[parquet]"')
    done = orrery.cli("run", QUICK, "--seed", "2", "--format", "parquet", "--out", str(tmp_path))
    assert done.exit_code == 0, done.stderr
    r = orrery.load(QUICK).run(seed=2)
    names = ["tasks", "training", "services", "placement_groups", "utilization", "timeline", "links"]
    for name in names:
        got = pd.read_parquet(tmp_path / f"{name}.parquet")
        want = getattr(r, name)
        assert list(got.columns) == list(want.columns), name
        assert len(got) == len(want), name
        for col in want.columns:
            kind = orrery._native.column_type(f"{name}.csv", col)
            a, b = got[col], want[col]
            assert (a.isna() == b.isna()).all(), (name, col)
            if kind == "float":
                # Bit for bit, as the CSV's round-trip text is.
                assert (a[b.notna()].astype("float64") == b[b.notna()]).all(), (name, col)
            else:
                assert list(a[b.notna()].astype(str)) == list(b[b.notna()].astype(str)), (name, col)


def test_the_extra_names_pyarrow():
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert any(d.startswith("pyarrow") for d in meta["project"]["optional-dependencies"]["parquet"])
