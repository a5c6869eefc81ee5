"""Which modules a piece of code leaves imported, in a fresh interpreter (the test's own
process has imported everything already): start-up tests check what a path never needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_of(code: str, names: set[str]) -> list[str]:
    """Those of ``names`` (modules or top-level packages) imported once ``code`` has run."""
    check = (f"{code}\nimport json, sys\n"
             f"loaded = {{m.split('.')[0] for m in sys.modules}} | set(sys.modules)\n"
             f"print(json.dumps(sorted(loaded & set({json.dumps(sorted(names))}))))\n")
    done = subprocess.run([sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])
