"""What a command wrote, read back: tables as DataFrames, JSON documents, the report, plots.

Architecture invariant: this module reads files the Rust core wrote; it computes no figure.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import _native


class Image:
    """A PNG plot. Jupyter shows it inline (``_repr_png_``); ``save(path)`` writes it."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name = name
        self.data = data

    def _repr_png_(self) -> bytes:
        return self.data

    def save(self, path: "os.PathLike[str] | str") -> None:
        Path(path).write_bytes(self.data)

    def __repr__(self) -> str:
        return f"<orrery.Image {self.name}.png, {len(self.data)} bytes>"


def _declared(table: str, text: str) -> Dict[str, str]:
    """A run table's columns and their declared kinds ("text", "int", "float")."""
    import csv

    header = text.split("\n", 1)[0]
    if not header:
        return {}
    return {n: _native.column_type(table, n) for n in next(csv.reader([header]))}


def _frame(table: str, text: str, declared: bool):
    """One CSV table as a pandas DataFrame.

    Run tables get the types ``--format parquet`` declares (text → string, whole numbers →
    nullable Int64, the rest → float64), never types guessed from the values; other tables
    (sweep, compare, drill) are read with pandas' inference. Empty cells are missing values;
    text such as ``NA`` stays text; floats read back bit for bit (``round_trip``).
    """
    import pandas as pd

    kinds = {"text": "string", "int": "Int64", "float": "float64"}
    dtype = {n: kinds[k] for n, k in _declared(table, text).items()} if declared else {}
    # pandas 3 parses floats exactly by default and deprecates the option; earlier ones need it.
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    return pd.read_csv(
        io.StringIO(text), dtype=dtype or None, keep_default_na=False, na_values=[""], **exact
    )


MANIFEST = ".orrery-files"


def _listed(folder: Path) -> List[str]:
    """The files a command's complete run wrote into ``folder``: those its ``.orrery-files``
    lists, written last. A folder without it (a run stopped halfway, or a stale one) or missing
    a file it lists holds an incomplete run and raises :class:`OrreryError`; files it does not
    list (an earlier run's, your own notes) are not the command's and are left out."""
    from . import OrreryError

    manifest = folder / MANIFEST
    if not manifest.is_file() or manifest.is_symlink():
        raise OrreryError(f"{folder} holds an incomplete run: it has no {MANIFEST}")
    names = sorted(n for n in manifest.read_text(encoding="utf-8").splitlines() if n.strip())
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise OrreryError(
            f"{folder} holds an incomplete run: {MANIFEST} lists {', '.join(missing)}, not there"
        )
    return names


class Outputs:
    """The files one command wrote, held in memory (the folder may be gone).

    ``tables`` maps a table's name (its CSV file without ``.csv``) to a DataFrame, read on
    first use; ``json`` maps each JSON file's name to its document; ``report`` is report.md;
    ``files`` lists every file written; ``stdout`` is what the command printed.
    """

    _declared_types = False

    def __init__(self, folder: Path, stdout: str, stderr: str, listed: bool = True) -> None:
        self.folder = folder
        self.stdout = stdout
        self.stderr = stderr
        # A sweep shard's folder has no manifest (shards of one sweep share a folder): its files.
        self.files: List[str] = (
            _listed(folder)
            if listed
            else sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
        )
        self._csv: Dict[str, str] = {}
        self._png: Dict[str, bytes] = {}
        self.json: Dict[str, Any] = {}
        self.report: Optional[str] = None
        for name in self.files:
            p = folder / name
            stem, ext = os.path.splitext(name)
            if ext == ".csv":
                self._csv[stem] = p.read_text(encoding="utf-8")
            elif ext == ".png":
                self._png[stem] = p.read_bytes()
            elif ext == ".json" and name != "trace.json":
                self.json[stem] = json.loads(p.read_text(encoding="utf-8"))
            elif name == "report.md":
                self.report = p.read_text(encoding="utf-8")
        self._frames: Dict[str, Any] = {}

    @property
    def table_names(self) -> List[str]:
        return sorted(self._csv)

    def table(self, name: str):
        """The table ``name`` (e.g. ``"tasks"``) as a pandas DataFrame."""
        if name not in self._csv:
            raise KeyError(f"no table {name!r}; this command wrote {', '.join(self.table_names)}")
        if name not in self._frames:
            self._frames[name] = _frame(name + ".csv", self._csv[name], self._declared_types)
        return self._frames[name]

    @property
    def tables(self) -> Dict[str, Any]:
        return {n: self.table(n) for n in self.table_names}

    def csv(self, name: str) -> str:
        """The table ``name`` exactly as the CLI wrote it."""
        return self._csv[name]

    @property
    def plot_names(self) -> List[str]:
        return sorted(self._png)

    def plot(self, name: str) -> Image:
        """The PNG plot ``name`` (e.g. ``"timeline"``), displayed inline in Jupyter."""
        if name not in self._png:
            have = ", ".join(self.plot_names) or "none (plots=False?)"
            raise KeyError(f"no plot {name!r}; this command drew {have}")
        return Image(name, self._png[name])

    def to_polars(self) -> Dict[str, Any]:
        """Every table as a Polars DataFrame (needs ``polars``), read from the same CSV text
        with the same declared types (String, Int64, Float64; empty cells null)."""
        try:
            import polars as pl
        except ImportError as e:  # pragma: no cover - depends on what is installed
            raise ImportError("to_polars() needs polars: pip install polars") from e
        kinds = {"text": pl.String, "int": pl.Int64, "float": pl.Float64}
        out = {}
        for n in self.table_names:
            text = self._csv[n]
            schema = (
                {c: kinds[k] for c, k in _declared(n + ".csv", text).items()}
                if self._declared_types
                else None
            )
            out[n] = pl.read_csv(
                io.BytesIO(text.encode("utf-8")),
                schema_overrides=schema,
                null_values=[""],
                infer_schema_length=None,
            )
        return out

    def __repr__(self) -> str:
        return f"<orrery.{type(self).__name__}: {', '.join(self.table_names)}>"


class RunResult(Outputs):
    """What ``Scenario.run`` wrote: the CLI's ``orrery run`` files.

    ``header`` is run.json's header (version, scenario, scenario hash, seed, policy, model
    sources, network models, tiers: what reproduces the run); ``metrics`` the rest of run.json.
    The tables are attributes too: ``tasks``, ``training``, ``services``, ``llm_services``,
    ``placement_groups``, ``utilization``, ``cpu_utilization``, ``links``, ``timeline``.
    """

    _declared_types = True

    @property
    def header(self) -> Dict[str, Any]:
        return self.json["run"]["header"]

    @property
    def metrics(self) -> Dict[str, Any]:
        return self.json["run"]["metrics"]

    tasks = property(lambda self: self.table("tasks"))
    training = property(lambda self: self.table("training"))
    services = property(lambda self: self.table("services"))
    llm_services = property(lambda self: self.table("llm_services"))
    placement_groups = property(lambda self: self.table("placement_groups"))
    utilization = property(lambda self: self.table("utilization"))
    cpu_utilization = property(lambda self: self.table("cpu_utilization"))
    links = property(lambda self: self.table("links"))
    timeline = property(lambda self: self.table("timeline"))


class SweepResult(Outputs):
    """What ``sweep`` or ``merge`` wrote: ``runs`` (one row per run), ``summary`` (one row
    per swept combination) and ``summary_json``."""

    runs = property(lambda self: self.table("runs"))
    summary = property(lambda self: self.table("summary"))
    summary_json = property(lambda self: self.json["summary"])


class CompareResult(Outputs):
    """What ``compare`` wrote: ``comparison`` (compare.csv: one row per scenario and metric) and
    ``compare_json``."""

    comparison = property(lambda self: self.table("compare"))
    compare_json = property(lambda self: self.json["compare"])


class DrillResult(Outputs):
    """What ``drill`` wrote: ``drill`` (one row per run) and ``drill_json``."""

    drill = property(lambda self: self.table("drill"))
    drill_json = property(lambda self: self.json["drill"])
