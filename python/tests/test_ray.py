"""`orrery.ray.sweep` on a real (local) Ray instance: shards as Ray tasks, merged on the
driver, byte for byte the unsharded CLI sweep."""

import os

import pytest

# Single-machine mode, as Ray runs on macOS and Windows: every address is 127.0.0.1 (read when
# ray is imported, so set first). Otherwise Ray would talk to this machine's network address.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

ray = pytest.importorskip("ray", reason="Ray is installed by .ci/run; pip install ray")

import orrery
import orrery.ray
from conftest import same_files

SW = "scenarios/sweep_fabric.orr"


@pytest.fixture(scope="module")
def local_ray():
    # A real local Ray instance, on loopback only.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    assert [n["NodeManagerAddress"] for n in ray.nodes()] == ["127.0.0.1"]
    yield
    ray.shutdown()


def test_ray_sweep_equals_the_cli_sweep(local_ray, tmp_path, cli_run, monkeypatch):
    code, _, err = cli_run("sweep", SW, "--out", tmp_path / "cli")
    assert code == 0, err
    # Count the commands this (driver) process runs: the shards must run elsewhere.
    here = []
    native = orrery._native.cli
    monkeypatch.setattr(orrery._native, "cli", lambda a: here.append(a[0]) or native(a))
    r = orrery.ray.sweep(SW, shards=4, out=tmp_path / "ray", keep_shards=tmp_path / "shards")
    names = same_files(tmp_path / "cli", tmp_path / "ray")
    assert {"runs.csv", "summary.csv", "summary.json", "report.md"} <= set(names)
    assert sorted(p.name for p in (tmp_path / "shards").iterdir()) == [
        f"shard-{i}-of-4.json" for i in range(4)
    ]
    assert len(r.runs) == 18
    # The shards ran as Ray tasks in Ray's worker processes; the driver only merged.
    assert here == ["merge"]


def test_ray_sweep_with_seeds_and_more_shards_than_runs(local_ray, tmp_path, cli_run):
    assert cli_run("sweep", SW, "--seeds", "1", "--out", tmp_path / "cli", "--no-plots")[0] == 0
    orrery.ray.sweep(SW, shards=8, seeds=1, out=tmp_path / "ray", plots=False)
    same_files(tmp_path / "cli", tmp_path / "ray")


def test_a_failing_shard_raises_the_cli_message(local_ray, tmp_path):
    bad = tmp_path / "bad.orr"
    bad.write_text(open(SW).read().replace("seeds 1..3", "seeds 1..3\n  sweep nowhere.x in [1, 2]"))
    with pytest.raises(Exception) as e:
        orrery.ray.sweep(str(bad), shards=2, out=tmp_path / "o")
    assert "nowhere" in str(e.value)
    assert not (tmp_path / "o").exists()
