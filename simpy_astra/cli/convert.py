"""``simpy-astra convert FORMAT ...``: turn other workload formats into Chakra traces.

Each format is a module exposing ``main(argv) -> int``; add a line to ``FORMATS``.
"""

from __future__ import annotations

import importlib

from simpy_astra.cli.args import kinds_help
from simpy_astra.errors import InputError

FORMATS: dict[str, str] = {
    "text": "simpy_astra.workloads.text_workload",  # ASTRA-sim 1.0 layer files (Resnet50_DataParallel.txt, ...)
    "pytorch": "simpy_astra.workloads.pytorch.convert",  # PyTorch host (+ Kineto) traces, with their collectives
}


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        print(kinds_help("convert", "format", FORMATS))
        return 0
    if not argv or argv[0] not in FORMATS:
        what = f"unknown format {argv[0]!r}" if argv else "give the format to convert from"
        raise InputError(f"convert: {what}; use one of {', '.join(FORMATS)} "
                         f"(e.g. simpy-astra convert text --help)")
    return importlib.import_module(FORMATS[argv[0]]).main(argv[1:])
