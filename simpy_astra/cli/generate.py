"""``simpy-astra generate KIND ...``: write Chakra traces from parameters.

The kinds are the generators of :data:`simpy_astra.workloads.generator_registry.GENERATORS` that have a
command (a module exposing ``main(argv) -> int``); registering a generator there is all it takes.
"""

from __future__ import annotations

import importlib

from simpy_astra.cli.args import kinds_help
from simpy_astra.errors import InputError
from simpy_astra.workloads.generated import GENERATORS


def main(argv: list[str]) -> int:
    kinds = {name: entry.command for name, entry in GENERATORS.items() if entry.command}
    if argv[:1] in (["-h"], ["--help"]):
        print(kinds_help("generate", "kind", kinds))
        return 0
    if not argv or argv[0] not in kinds:
        what = f"unknown kind {argv[0]!r}" if argv else "give the kind of workload to generate"
        raise InputError(f"generate: {what}; use one of {', '.join(kinds)} "
                         f"(e.g. simpy-astra generate microbench --help); a generator of your own runs from a "
                         f"scenario, workload: {{generate: module:function, ...}} (docs/generators.md)")
    return importlib.import_module(kinds[argv[0]]).main(argv[1:])
