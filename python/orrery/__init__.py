"""Orrery from Python: load a scenario, run it, read the results as pandas DataFrames.

    import orrery
    s = orrery.load("scenarios/quickstart.orr")
    r = s.run(seed=1)
    r.tasks.head()          # a DataFrame
    r.header["scenario_hash"]
    r.plot("timeline")      # shown inline in Jupyter

Every command runs the very code of the ``orrery`` binary, in this process
(``orrery._native.cli``), so the files and tables are byte for byte the CLI's for the same
scenario and seed. Errors raise :class:`OrreryError` with the CLI's located diagnostics.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Union

from . import _native
from ._outputs import (
    CompareResult,
    DrillResult,
    Image,
    Outputs,
    RunResult,
    SweepResult,
)

__version__: str = _native.__version__

__all__ = [
    "CompareResult",
    "Diagnostic",
    "DrillResult",
    "Image",
    "OrreryError",
    "Outputs",
    "RunResult",
    "Scenario",
    "SweepResult",
    "cli",
    "compare",
    "drill",
    "import_ray_cluster",
    "load",
    "merge",
    "sweep",
]

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Diagnostic:
    """One located problem, as ``orrery check`` reports it (lines and columns from 1)."""

    severity: str
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    column: Optional[int] = None
    end_line: Optional[int] = None
    end_column: Optional[int] = None
    label: str = ""
    help: Optional[str] = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}: " if self.line is not None else ""
        tail = f" ({self.help})" if self.help else ""
        return f"{where}{self.severity}: {self.message}{tail}"


class OrreryError(Exception):
    """A scenario or command the CLI refuses. ``diagnostics`` are the located problems (for a
    scenario that does not load), ``exit_code`` the CLI's status (2 bad input, 1 a run that
    broke an invariant), ``stderr`` exactly what the CLI printed."""

    def __init__(
        self, message: str, diagnostics: Sequence[Diagnostic] = (), exit_code: int = 2, stderr: str = ""
    ) -> None:
        super().__init__(message)
        self.diagnostics: List[Diagnostic] = list(diagnostics)
        self.exit_code = exit_code
        self.stderr = stderr


@dataclass(frozen=True)
class Completed:
    """What :func:`cli` returns: the exit status and the two streams."""

    exit_code: int
    stdout: str
    stderr: str


def cli(*args: str) -> Completed:
    """Runs ``orrery ARGS...`` in this process and returns what it printed; never raises for a
    non-zero status (``cli("check", "x.orr").exit_code``)."""
    code, out, err = _native.cli([str(a) for a in args])
    return Completed(code, out, err)


def _run(args: List[str]) -> Completed:
    done = cli(*args)
    if done.exit_code != 0:
        first = next((l for l in done.stderr.splitlines() if l.strip()), "")
        raise OrreryError(
            f"orrery {args[0]} failed (exit {done.exit_code}): {first}\n{done.stderr}".rstrip(),
            exit_code=done.exit_code,
            stderr=done.stderr,
        )
    return done


def _native_call(f, *args, **kwargs):
    """Calls into the core; a panic there (a bug, never bad input) comes back from it as a
    RuntimeError and raises :class:`OrreryError` with exit code 101, the CLI's status for one."""
    try:
        return f(*args, **kwargs)
    except RuntimeError as e:
        raise OrreryError(str(e), exit_code=101, stderr=str(e)) from e


def _looks_like_text(source: str) -> bool:
    return "\n" in source or "{" in source


class Scenario:
    """A scenario that loaded without errors. ``path`` is the file runs read, ``hash`` the
    scenario hash every result carries, ``warnings`` the diagnostics that were not errors."""

    def __init__(
        self, path: Path, hash: str, warnings: List[Diagnostic], owned: Optional[str], allow_infeasible: bool
    ) -> None:
        self.path = path
        self.hash = hash
        self.warnings = warnings
        self._allow_infeasible = allow_infeasible
        if owned is not None:
            # A scenario given as text lives in a private folder as long as this object does.
            weakref.finalize(self, shutil.rmtree, owned, True)

    @property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def run(
        self,
        seed: int = 1,
        policy: Optional[str] = None,
        horizon: Optional[str] = None,
        *,
        failures: Optional[str] = None,
        out: Optional[PathLike] = None,
        plots: bool = True,
        trace: bool = False,
        max_events: Union[None, int, str] = None,
        max_memory: Optional[str] = None,
    ) -> RunResult:
        """``orrery run``: simulates the scenario with ``seed``; ``policy`` is ``ray_default``,
        ``spread`` or ``topology_aware``; ``horizon`` a duration such as ``"12 h"``;
        ``failures`` a named failures block. Files go to ``out`` (kept) or a temporary folder
        (removed once read). ``max_events`` and ``max_memory`` (``"16 GiB"``) raise the work
        budget. Tables come back as DataFrames; for Parquet files, run
        ``orrery.cli("run", ..., "--format", "parquet")``. Raises :class:`OrreryError` as the
        CLI exits non-zero."""
        args = ["run", str(self.path)] + _options(
            seed=int(seed),
            policy=policy,
            horizon=horizon,
            failures=failures,
            plots=plots,
            trace=trace,
            max_events=max_events,
            max_memory=max_memory,
            allow_infeasible=self._allow_infeasible,
        )
        return _into(RunResult, args, out)

    def __repr__(self) -> str:
        return f"<orrery.Scenario {self.path} hash {self.hash}>"


def load(source: Union[PathLike, str], *, allow_infeasible: bool = False, name: str = "scenario.orr") -> Scenario:
    """Loads a scenario from a path, or from its text (a string holding a newline or a ``{``).

    Raises :class:`OrreryError` whose ``diagnostics`` locate every error (file, line, column,
    message), exactly those ``orrery check`` prints. A scenario given as text is named ``name``
    in messages. It has no folder: ``include`` is refused, calibration profiles are looked up
    in ``./calibration/`` only, and traces or sample files cannot be found (``run`` raises).
    Load a scenario that names other files from its path.
    """
    owned = None
    if isinstance(source, str) and source == "":
        raise OrreryError("an empty string is neither a scenario's path nor its text")
    if isinstance(source, str) and _looks_like_text(source):
        r = _native_call(_native.load, text=source, name=name, allow_infeasible=allow_infeasible)
        if r["ok"]:
            owned = tempfile.mkdtemp(prefix="orrery-")
            path = Path(owned) / Path(name).name
            path.write_text(source, encoding="utf-8")
    else:
        path = Path(os.fspath(source))
        r = _native_call(_native.load, path=str(path), allow_infeasible=allow_infeasible)
    diags = [Diagnostic(**d) for d in r["diagnostics"]]
    if not r["ok"]:
        errors = [d for d in diags if d.severity == "error"]
        if all(d.line is None for d in errors):
            # The file could not be read: its one message says why.
            raise OrreryError("; ".join(d.message for d in errors), diagnostics=diags, stderr=r["rendered"])
        summary = "; ".join(str(d) for d in errors[:3]) + (" ..." if len(errors) > 3 else "")
        raise OrreryError(
            f"{len(errors)} error{'s' if len(errors) != 1 else ''}: {summary}\n{r['rendered']}".rstrip(),
            diagnostics=diags,
            stderr=r["rendered"],
        )
    return Scenario(path, r["hash"], [d for d in diags if d.severity != "error"], owned, allow_infeasible)


def _into(kind, args: List[str], out: Optional[PathLike], listed: bool = True):
    """Runs a writing command into ``out`` (or a temporary folder) and reads what it wrote: the
    files its ``.orrery-files`` lists (``listed``; a sweep shard's folder has none)."""
    if out is not None:
        done = _run(args + ["--out", os.fspath(out)])
        return kind(Path(os.fspath(out)), done.stdout, done.stderr, listed)
    with tempfile.TemporaryDirectory(prefix="orrery-") as d:
        done = _run(args + ["--out", d])
        return kind(Path(d), done.stdout, done.stderr, listed)


def _options(**given: object) -> List[str]:
    """CLI flags from keyword options, each as its flag (``max_events`` → ``--max-events``):
    ``None`` and ``False`` are left out, ``True`` is the bare flag, ``plots=False`` is
    ``--no-plots``, anything else ``--flag value``. Ranges and defaults are the CLI's."""
    args: List[str] = []
    for key, value in given.items():
        if key == "plots":
            args += [] if value else ["--no-plots"]
        elif value is True:
            args.append("--" + key.replace("_", "-"))
        elif value is not None and value is not False:
            args += ["--" + key.replace("_", "-"), str(value)]
    return args


def _path(p: Union[PathLike, Scenario]) -> str:
    return str(p.path) if isinstance(p, Scenario) else os.fspath(p)


def _seeds(seeds: Union[None, int, str, range]) -> List[str]:
    if seeds is None:
        return []
    if isinstance(seeds, range):
        if seeds.step != 1 or len(seeds) == 0:
            raise ValueError("seeds: a range with step 1 and at least one seed")
        return ["--seeds", f"{seeds.start}..{seeds[-1]}"]
    return ["--seeds", str(seeds)]


def sweep(
    scenario: Union[PathLike, Scenario],
    *,
    experiment: Optional[str] = None,
    seeds: Union[None, int, str, range] = None,
    threads: Optional[int] = None,
    shard: Optional[str] = None,
    out: Optional[PathLike] = None,
    plots: bool = True,
    max_events: Union[None, int, str] = None,
    max_memory: Optional[str] = None,
    allow_infeasible: bool = False,
) -> SweepResult:
    """``orrery sweep``: every combination of the experiment's swept values × every seed
    (``seeds=5`` is 1..5, ``"3..7"`` or ``range(3, 8)`` 3..7). ``shard="i/n"`` runs one shard
    and writes ``shard-i-of-n.json`` (see :func:`merge`, :mod:`orrery.ray`)."""
    args = ["sweep", _path(scenario)] + _seeds(seeds)
    args += _options(
        experiment=experiment,
        threads=threads,
        shard=shard,
        plots=plots,
        max_events=max_events,
        max_memory=max_memory,
        allow_infeasible=allow_infeasible,
    )
    return _into(SweepResult, args, out, listed=shard is None)


def merge(shards: Iterable[PathLike], out: PathLike, *, plots: bool = True) -> SweepResult:
    """``orrery merge``: shard files (or folders holding them) into the files the unsharded
    sweep writes, in ``out``."""
    args = ["merge"] + [os.fspath(s) for s in shards] + _options(plots=plots)
    return _into(SweepResult, args, out)


def compare(
    scenarios: Sequence[Union[PathLike, Scenario]],
    *,
    seeds: Union[None, int, str, range] = None,
    failures: Optional[str] = None,
    horizon: Optional[str] = None,
    threads: Optional[int] = None,
    out: Optional[PathLike] = None,
    plots: bool = True,
    max_events: Union[None, int, str] = None,
    max_memory: Optional[str] = None,
    allow_infeasible: bool = False,
) -> CompareResult:
    """``orrery compare``: the same metrics over several scenarios (hardware mixes), with
    intervals over seeds."""
    args = ["compare"] + [_path(s) for s in scenarios] + _seeds(seeds)
    args += _options(
        failures=failures,
        horizon=horizon,
        threads=threads,
        plots=plots,
        max_events=max_events,
        max_memory=max_memory,
        allow_infeasible=allow_infeasible,
    )
    return _into(CompareResult, args, out)


def drill(
    scenarios: Union[PathLike, Scenario, Sequence[Union[PathLike, Scenario]]],
    *,
    seeds: Union[None, int, str, range] = None,
    threads: Optional[int] = None,
    horizon: Optional[str] = None,
    policies: Sequence[str] = (),
    out: Optional[PathLike] = None,
    plots: bool = True,
    max_events: Union[None, int, str] = None,
    max_memory: Optional[str] = None,
    allow_infeasible: bool = False,
) -> DrillResult:
    """``orrery drill``: failure drills, each named failures block against a clean baseline,
    over seeds."""
    if isinstance(scenarios, (str, os.PathLike, Scenario)):
        scenarios = [scenarios]
    args = ["drill"] + [_path(s) for s in scenarios] + _seeds(seeds)
    args += _options(
        threads=threads,
        horizon=horizon,
        policies=",".join(policies) or None,
        plots=plots,
        max_events=max_events,
        max_memory=max_memory,
        allow_infeasible=allow_infeasible,
    )
    return _into(DrillResult, args, out)


@dataclass(frozen=True)
class ImportedCluster:
    """What :func:`import_ray_cluster` made: the scenario's ``text`` and one ``warnings`` entry
    per thing that could not be mapped (as the CLI's ``FILE:LINE:COLUMN: warning:`` lines, each
    as ``LINE:COLUMN: message``)."""

    text: str
    warnings: List[str]

    def load(self, name: str = "cluster.orr") -> Scenario:
        """The imported cluster as a :class:`Scenario` (add a workload to run it)."""
        return load(self.text, name=name)

    def save(self, path: PathLike) -> None:
        Path(os.fspath(path)).write_text(self.text, encoding="utf-8")


def import_ray_cluster(
    yaml: PathLike,
    *,
    strict: bool = False,
    name: Optional[str] = None,
    workers: str = "min",
) -> ImportedCluster:
    """``orrery import ray-cluster``: a Ray cluster launcher YAML or a KubeRay RayCluster
    (RayJob, RayService) as a scenario of catalog hardware. ``workers`` is ``"min"`` or
    ``"max"`` (which end of each autoscaling range becomes the node count); ``strict`` makes
    any warning an error. Malformed YAML raises :class:`OrreryError` with ``FILE:LINE:COLUMN``."""
    args = ["import", "ray-cluster", os.fspath(yaml)]
    args += _options(workers=workers, strict=strict, name=name)
    done = _run(args)
    warnings = []
    for l in done.stderr.splitlines():
        where, sep, what = l.partition(": warning: ")
        if sep:
            line, col = where.rsplit(":", 2)[-2:]
            warnings.append(f"{line}:{col}: {what}")
    return ImportedCluster(done.stdout, warnings)
