"""``benchmarks/reference_cases.py --backend packet`` times the packet backend on the reference
cases' inputs: the reference has no packet cases, and the script picked cases by the backend
they were run on, so it printed its header and measured nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "reference_cases.py"


def test_a_backend_the_reference_lacks_runs_the_unaware_cases_inputs(reference_dir: Path) -> None:
    case = "ex_cu_all_reduce_4npus_ring"
    done = subprocess.run([sys.executable, str(BENCH), "--backend", "packet", "--filter", f"^{case}$",
                           "--reference", str(reference_dir)], capture_output=True, text=True, check=True)
    rows = [line for line in done.stdout.splitlines() if line.startswith(case)]
    assert len(rows) == 1, done.stdout
    assert "run failed" not in rows[0]
