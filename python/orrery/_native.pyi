"""The Rust core (python/src/lib.rs). Use the functions of `orrery` rather than these."""

from typing import Any, Dict, List, Optional, Tuple

__version__: str

def cli(args: List[str]) -> Tuple[int, str, str]:
    """Runs `orrery ARGS...` in this process: (exit status, stdout, stderr)."""

def load(
    path: Optional[str] = None,
    text: Optional[str] = None,
    name: str = "<text>",
    allow_infeasible: bool = False,
) -> Dict[str, Any]:
    """Loads a scenario as `orrery check` does: keys ok, hash, diagnostics, rendered."""

def column_type(table: str, name: str) -> str:
    """The declared type of a run table's column: "text", "int" or "float"."""
