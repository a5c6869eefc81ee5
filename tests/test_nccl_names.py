"""NCCL's algorithm names live apart from its tuning model: reading a scenario checks the
names, and only a cluster preset loads the model's tables (simpy_astra/engine/nccl_names.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_reading_a_scenario_loads_no_nccl_tables() -> None:
    code = ("import sys\n"
            "import simpy_astra.config.scenario\n"
            "print('simpy_astra.engine.nccl_tuning' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_model_times_the_names_the_scenario_may_give() -> None:
    """One list of names for both: the model's collectives cover every forceable algorithm."""
    from simpy_astra.engine.nccl_names import ALGORITHMS, FORCEABLE, MODEL_ONLY
    from simpy_astra.engine.nccl_tuning import COLLECTIVE_ALGORITHMS

    assert set(FORCEABLE) == {a for algos in COLLECTIVE_ALGORITHMS.values() for a in algos}
    assert set(MODEL_ONLY) <= set(FORCEABLE) and set(ALGORITHMS) <= set(FORCEABLE)
