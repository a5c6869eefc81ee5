"""The tutorial's GEMM layers (``Layer, m, n, k`` CSV) and what one NPU runs of each under a
parallel strategy: the shapes of its forward, input-gradient and weight-gradient GEMMs and the
collectives of each pass, as ASTRA-sim's ``gen_astrasim_workload_input.py`` computes them
(the table in :mod:`~simpy_astra.workloads.gemm`).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from simpy_astra.errors import InputError
from simpy_astra.infra import files

STRATEGIES = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA")
PASSES = ("fwd", "ig", "wg")


@dataclass(frozen=True)
class GemmLayer:
    name: str
    m: int
    n: int
    k: int
    #: the row's fifth column, the tutorial's per-layer parallelism ("" where none): read by
    #: nothing, since ``parallel`` decides every layer's as the tutorial's generator does
    written_parallel: str = field(default="", compare=False)
    #: its line in the m,n,k file, for messages
    line: int = field(default=0, compare=False)


def read_mnk(path: str) -> list[GemmLayer]:
    """The tutorial's CSV: a ``Layer,m,n,k`` header, then one GEMM per line. A fifth column, the
    layer's parallelism (HYBRID_CUSTOMIZED's), is overwritten by ``--parallel`` in the
    tutorial's generator, so kept only to be warned of (:func:`overridden_parallel`); a sixth is
    refused: the generator overwrites the last column then, and reads the fifth as the layer's
    strategy (it stops on anything else), so the row does not say what it seems to."""
    text = files.read_text(path, "m,n,k file")
    rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r and any(c.strip() for c in r)]
    if not rows or [c.strip().lower() for c in rows[0][:4]] != ["layer", "m", "n", "k"]:
        raise InputError.in_file(f"{path}:1", "expected the header 'Layer,m,n,k'")
    layers = []
    for no, row in enumerate(rows[1:], start=2):
        while len(row) > 4 and not row[-1].strip():  # a spreadsheet's trailing empty cells
            row.pop()
        if len(row) > 5:
            # (ASTRA-sim's generator would read the 5th as the layer's strategy: docs/generators.md)
            raise InputError.in_file(f"{path}:{no}", f"layer {row[0].strip()!r} has {len(row)} columns, past "
                                                     f"Layer,m,n,k and its parallelism; remove those past the 5th")
        if len(row) < 4:
            raise InputError.in_file(f"{path}:{no}", f"expected 'name,m,n,k' (got {','.join(row)!r})")
        try:
            m, n, k = (int(c) for c in row[1:4])
        except ValueError:
            raise InputError.in_file(f"{path}:{no}", f"m, n and k of layer {row[0].strip()!r} must be "
                                                     f"integers") from None
        if min(m, n, k) < 1:
            raise InputError.in_file(f"{path}:{no}", f"m, n and k of layer {row[0].strip()!r} must be >= 1")
        name = row[0].strip()
        if len(name.split()) != 1:  # the text workload's columns are split at whitespace
            fix = f"write {'_'.join(name.split())!r}" if name else "give the layer a name"
            raise InputError.in_file(f"{path}:{no}", f"layer name {name!r} must be one word (the ASTRA-sim 1.0 text "
                                                     f"workload splits its columns at spaces); {fix}")
        layers.append(GemmLayer(name, m, n, k, row[4].strip() if len(row) > 4 else "", no))
    if not layers:
        raise InputError.in_file(path, "no layers after the header")
    return layers


def overridden_parallel(layers: list[GemmLayer], strategy: str, path: str) -> list[str]:
    """A warning where a layer's fifth column names a strategy other than ``strategy``: the
    tutorial's generator overwrites that column with ``--parallel`` (only its
    HYBRID_CUSTOMIZED, not generated here, reads it), so the layer runs under ``strategy``."""
    other = [layer for layer in layers if layer.written_parallel and layer.written_parallel != strategy]
    if not other:
        return []
    first = other[0]
    more = f" (and {len(other) - 1} more layer{'' if len(other) == 2 else 's'})" if len(other) > 1 else ""
    return [f"{path}:{first.line}: layer {first.name}'s 5th column says {first.written_parallel}{more}, but "
            f"parallel {strategy} decides every layer's, as ASTRA-sim's generator does (per-layer strategies, "
            f"its HYBRID_CUSTOMIZED, are not generated here); remove the column, or set parallel"]


def job_error(problem: str) -> InputError:
    """An error of the whole job (a layer of its m,n,k file under its parallelism), worded the
    same on the command line and, after the scenario's ``workload``, in a scenario."""
    return InputError(problem).with_parts(problem)


def _shards(strategy: str, num_npus: int, num_packages: int) -> tuple[int, int]:
    """(divisor of m, divisor of n) of one NPU's shard."""
    per_package = num_npus // num_packages
    return {"DATA": (num_npus, 1), "MODEL": (1, num_npus), "HYBRID_DATA_MODEL": (num_packages, per_package),
            "HYBRID_MODEL_DATA": (per_package, num_packages)}[strategy]


def pass_gemms(layer: GemmLayer, strategy: str, num_npus: int, num_packages: int) -> dict[str, tuple[int, int, int]]:
    """(M, N, K) of the forward, input-gradient and weight-gradient GEMM on one NPU."""
    dm, dn = _shards(strategy, num_npus, num_packages)
    m, n, k = int(layer.m / dm), int(layer.n / dn), layer.k  # the generator's int(a / b)
    if m < 1 or n < 1:
        raise job_error(f"layer {layer.name}: m={layer.m}, n={layer.n} leave an empty shard under {strategy} "
                      f"on {num_npus} NPUs ({num_packages} packages)")
    return {"fwd": (m, n, k), "ig": (m, k, n), "wg": (k, n, m)}


def collectives(layer: GemmLayer, strategy: str, num_npus: int, num_packages: int,
                dtype_bytes: int) -> dict[str, tuple[str, int]]:
    """(text comm type, bytes) of each pass, as the tutorial's generator computes them."""
    m, n, k, d = layer.m, layer.n, layer.k, dtype_bytes
    per_package = num_npus // num_packages
    if strategy == "DATA":
        return {"fwd": ("NONE", 0), "ig": ("NONE", 0), "wg": ("ALLREDUCE", int(n * k * d))}
    fwd = ("ALLGATHER", int(m * n * d / num_npus))
    if strategy == "MODEL":
        return {"fwd": fwd, "ig": ("REDUCESCATTER", int(m * k * d)), "wg": ("NONE", 0)}
    if strategy == "HYBRID_DATA_MODEL":
        return {"fwd": fwd, "ig": ("REDUCESCATTER", int(m * k * d / num_packages)),
                "wg": ("ALLREDUCE", int(k * n * d / per_package))}
    return {"fwd": fwd, "ig": ("REDUCESCATTER", int(m * k * d / per_package)),
            "wg": ("ALLREDUCE", int(n * k * d / num_packages))}
