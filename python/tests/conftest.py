"""Shared fixtures: the repository root and the `orrery` binary the Python results are checked
against (ORRERY_BIN, else target/release or target/debug; the tests fail if there is none)."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def orrery_bin() -> Path:
    given = os.environ.get("ORRERY_BIN")
    candidates = [Path(given)] if given else [ROOT / "target/release/orrery", ROOT / "target/debug/orrery"]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    pytest.fail(f"no orrery binary at {', '.join(map(str, candidates))}: build it (cargo build) or set ORRERY_BIN")


@pytest.fixture
def cli_run(orrery_bin, root):
    """Runs the binary in the repository root; (exit status, stdout, stderr)."""

    def run(*args: str):
        p = subprocess.run([str(orrery_bin), *map(str, args)], cwd=root, capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    return run


@pytest.fixture(autouse=True)
def in_root(root, monkeypatch):
    """Every test runs in the repository root, where scenario paths are relative to."""
    monkeypatch.chdir(root)


def same_files(a: Path, b: Path) -> list:
    """The names of the files of two folders, after checking they hold the same bytes."""
    names = sorted(p.name for p in a.iterdir() if p.is_file())
    assert names == sorted(p.name for p in b.iterdir() if p.is_file())
    for n in names:
        assert (a / n).read_bytes() == (b / n).read_bytes(), n
    return names
