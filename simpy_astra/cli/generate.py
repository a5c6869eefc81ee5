"""``simpy-astra generate KIND ...``: write Chakra traces from parameters.

Each kind is a module in ``workloads/`` exposing ``main(argv) -> int``; add a line to ``KINDS``.
"""

from __future__ import annotations

import importlib

from simpy_astra.errors import InputError

KINDS: dict[str, str] = {
    "microbench": "simpy_astra.workloads.microbench",
    "transformer": "simpy_astra.workloads.transformer",
    "gemm": "simpy_astra.workloads.gemm",  # SCALE-Sim compute times for GEMM layers (extra .[gemm])
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in KINDS:
        got = argv[0] if argv else "nothing"
        raise InputError(f"generate: unknown kind {got!r}; use one of {', '.join(KINDS)} "
                         f"(e.g. simpy-astra generate microbench --help)")
    return importlib.import_module(KINDS[argv[0]]).main(argv[1:])
