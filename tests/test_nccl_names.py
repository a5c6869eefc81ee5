"""NCCL's algorithm names live apart from its tuning model: reading a scenario checks the
names, and only a cluster preset loads the model's tables (simpy_astra/engine/nccl_names.py)."""

from __future__ import annotations

from tests.fresh_imports import imported_of


def test_reading_a_scenario_loads_no_nccl_tables() -> None:
    tables = "simpy_astra.engine.nccl_tuning"
    assert imported_of("import simpy_astra.config.scenario", {tables}) == []


def test_the_model_times_the_names_the_scenario_may_give() -> None:
    """One list of names for both: the model's collectives cover every forceable algorithm."""
    from simpy_astra.engine.nccl_names import ALGORITHMS, FORCEABLE, MODEL_ONLY
    from simpy_astra.engine.nccl_tuning import COLLECTIVE_ALGORITHMS

    assert set(FORCEABLE) == {a for algos in COLLECTIVE_ALGORITHMS.values() for a in algos}
    assert set(MODEL_ONLY) <= set(FORCEABLE) and set(ALGORITHMS) <= set(FORCEABLE)
