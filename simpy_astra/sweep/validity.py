"""Points Megatron-LM would refuse to launch, found before anything runs.

Such a point is a result of the design space (``tp 8 x pp 16`` does not divide 1,000 GPUs), not
a failure of the simulator: it becomes a row with ``status: invalid`` and the rule in ``error``,
and ``--list`` marks it. Reading the arguments costs microseconds, so every point is checked
up front; a rule only the full load reaches (FP8 on a GPU without FP8 units) is still caught
when the point runs (point.py).
"""

from __future__ import annotations

from typing import Any

from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.sweep.spec import megatron_args_of
from simpy_astra.workloads.megatron.arguments import parse

INVALID = "invalid"


def invalid_figures(exc: InvalidConfigurationError, where: str) -> dict[str, Any]:
    """The row of a refused point: its rule first in ``error``, then Megatron's reason."""
    text = " ".join(exc.message.split())
    return {"status": INVALID, "error": f"{exc.rule}: {text}", "rule": exc.rule, "wall_s": 0.0}


def verdict(scenario: dict[str, Any], where: str) -> tuple[dict[str, Any] | None, str]:
    """(the invalid row of a point Megatron refuses, or None; why a point's arguments will
    fail when it runs, or ''): a value beyond what the simulator builds, such as a trace of
    more nodes than its bound, which ``--list`` shows rather than only the run."""
    args = megatron_args_of(scenario)
    cluster = scenario.get("cluster")
    gpus = cluster.get("gpus") if isinstance(cluster, dict) else None
    if args is None or not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        return None, ""
    try:
        parse(args, gpus, f"{where}: workload")
    except InvalidConfigurationError as exc:
        return invalid_figures(exc, where), ""
    except InputError as exc:
        return None, " ".join(exc.message.split())
    return None, ""
