"""Sweeps on a Ray cluster: each shard of ``orrery sweep`` is a Ray task.

    import ray, orrery.ray
    ray.init()                                   # or ray.init(address="auto") on a cluster
    r = orrery.ray.sweep("scenarios/sweep_fabric.orr", shards=8, out="outputs/fabric")
    r.summary                                    # the same DataFrame as the unsharded sweep

Each task calls this package's native core (``orrery sweep FILE --shard i/n``), returns the
shard file's bytes to the driver, and the driver merges them with ``orrery merge``: the files
written are byte for byte those of ``orrery sweep FILE`` on one machine (the shard format and
the merge are the CLI's; runs are numbered and seeded the same way in both).

Where the scenario must be readable: a task reads the scenario (and what it includes, its
profiles and traces) from the same path the driver was given. On one machine, or on a cluster
with a shared file system, pass the path as it is. Otherwise ship the folder with Ray's
runtime environment, ``ray.init(runtime_env={"working_dir": "."})``, and give a path relative
to it. A task that cannot read the scenario fails with the CLI's message.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import List, Optional, Tuple, Union

from . import SweepResult, _path, _run, _seeds, merge

__all__ = ["sweep", "run_shard"]


def run_shard(
    scenario: str,
    index: int,
    shards: int,
    experiment: Optional[str],
    seeds: List[str],
    threads: int,
    cwd: Optional[str],
) -> Tuple[str, bytes]:
    """One shard, where it runs: ``(file name, file bytes)`` of ``shard-i-of-n.json``.

    Runs in the driver's working folder when this machine has it and the scenario is there
    (one machine, shared file system); else in the task's own (Ray's ``working_dir``)."""
    here = os.getcwd()
    there = cwd if cwd and os.path.exists(os.path.join(cwd, scenario)) else here
    args = ["sweep", scenario, "--shard", f"{index}/{shards}", "--threads", str(threads)]
    args += seeds + (["--experiment", experiment] if experiment else []) + ["--no-plots"]
    with tempfile.TemporaryDirectory(prefix="orrery-shard-") as d:
        os.chdir(there)
        try:
            _run(args + ["--out", d])
        finally:
            os.chdir(here)
        name = f"shard-{index}-of-{shards}.json"
        return name, (Path(d) / name).read_bytes()


def sweep(
    scenario: Union[str, "os.PathLike[str]"],
    shards: int,
    *,
    experiment: Optional[str] = None,
    seeds: Union[None, int, str, range] = None,
    threads_per_shard: int = 1,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
    plots: bool = True,
    keep_shards: Optional[Union[str, "os.PathLike[str]"]] = None,
) -> SweepResult:
    """Runs ``orrery sweep`` as ``shards`` Ray tasks (each ``num_cpus=threads_per_shard``) on
    the Ray cluster this process is connected to (``ray.init`` first), merges their shard
    files on the driver into ``out`` (or a temporary folder) and returns what was written.
    ``keep_shards`` keeps the shard files in that folder too. A failed shard raises (the
    CLI's message inside Ray's ``RayTaskError``); nothing is merged then."""
    import ray

    if not ray.is_initialized():
        raise RuntimeError("orrery.ray.sweep needs a Ray connection: call ray.init() first")
    if not 1 <= int(shards) <= 100_000:
        raise ValueError("shards: 1 to 100000")
    shards = int(shards)
    path = _path(scenario)
    task = ray.remote(num_cpus=threads_per_shard)(run_shard)
    seed_flags = _seeds(seeds)
    refs = [
        task.remote(path, i, shards, experiment, seed_flags, threads_per_shard, os.getcwd())
        for i in range(shards)
    ]
    results = ray.get(refs)
    with tempfile.TemporaryDirectory(prefix="orrery-shards-") as d:
        folder = Path(keep_shards) if keep_shards is not None else Path(d)
        folder.mkdir(parents=True, exist_ok=True)
        files = []
        for name, data in results:
            (folder / name).write_bytes(data)
            files.append(folder / name)
        return merge(files, out if out is not None else Path(d) / "merged", plots=plots)
