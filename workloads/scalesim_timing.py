"""GEMM cycles timed by SCALE-Sim (the ``scalesim`` package, extra ``.[gemm]``) on a systolic
array: the array's config, one SCALE-Sim run for every distinct shape, its cycles kept in a
cache, and the bounds past which a GEMM is not handed to it.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import re
import tempfile
from dataclasses import dataclass
from importlib.metadata import version

from simpy_astra.errors import InputError, Param
from simpy_astra.workloads.generated import cache_root

DATAFLOWS = ("ws", "os", "is")
DEFAULT_SRAM_KB = (6144, 6144, 2048)  # ifmap, filter, ofmap: the tutorial's google.cfg
MISSING_EXTRA = "generate gemm needs SCALE-Sim: pip install 'simpy-astra[gemm]' (the scalesim package)"


#: the largest systolic array timed (cells): SCALE-Sim's tables grow with them, 100000x100000
#: asked it for 74.5 GiB at once
MAX_ARRAY_CELLS = 4096 * 4096
#: the most cycles one GEMM is timed for, and cycles x (rows + cols), the numbers SCALE-Sim
#: keeps: measured, it steps 7,000-14,000 cycles a second and keeps 35-55 bytes a number (2.4 GB
#: for 64x64x64 on 4096x4096, 1 GB and 40 s for 1024x512x512 on 32x32); a layer of m = 1e11
#: asked numpy for 5.8 TiB, and m = k = n = 1024 on 8x8 ran past 15 minutes
MAX_SCALESIM_CYCLES = 1_000_000
MAX_SCALESIM_CELLS = 2 ** 27


@dataclass(frozen=True)
class ArraySpec:
    """The accelerator SCALE-Sim models."""

    rows: int
    cols: int
    dataflow: str = "ws"
    sram_kb: tuple[int, int, int] = DEFAULT_SRAM_KB
    include_prefetch: bool = False

    @classmethod
    def parse(cls, array: str, dataflow: str = "ws", sram: str | None = None,
              include_prefetch: bool = False) -> ArraySpec:
        m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", str(array))
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise InputError.of_params(Param("array"), f": expected ROWSxCOLS such as 32x32 (got {array!r})")
        if int(m.group(1)) * int(m.group(2)) > MAX_ARRAY_CELLS:  # else an internal MemoryError, or swap
            raise InputError.of_params(Param("array"), f": {m.group(1)}x{m.group(2)} is past the {MAX_ARRAY_CELLS:,} "
                                       f"cells (4096x4096) SCALE-Sim is run for here: it keeps several ROWS x COLS "
                                       f"tables per layer (4096x4096 took 2.4 GB and a minute); give a smaller array")
        if dataflow not in DATAFLOWS:
            raise InputError.of_params(Param("dataflow"), f": expected one of {', '.join(DATAFLOWS)} (got {dataflow!r})")
        sizes = DEFAULT_SRAM_KB
        if sram is not None:
            parts = str(sram).split(",")
            if len(parts) != 3 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
                raise InputError.of_params(Param("sram"), f": expected IFMAP,FILTER,OFMAP sizes in kB such as "
                                                          f"6144,6144,2048 (got {sram!r})")
            sizes = tuple(int(p) for p in parts)
        return cls(int(m.group(1)), int(m.group(2)), dataflow, sizes, include_prefetch)

    def config_text(self) -> str:
        """A SCALE-Sim (v3) config file for this array."""
        ifmap, filt, ofmap = self.sram_kb
        return f"""[general]
run_name = simpy_astra

[architecture_presets]
ArrayHeight: {self.rows}
ArrayWidth: {self.cols}
IfmapSramSzkB: {ifmap}
FilterSramSzkB: {filt}
OfmapSramSzkB: {ofmap}
IfmapOffset: 0
FilterOffset: 10000000
OfmapOffset: 20000000
Bandwidth: 10
Dataflow: {self.dataflow}
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
FilterCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[run_presets]
InterfaceBandwidth: CALC
UseRamulatorTrace: False

[sparsity]
SparsitySupport: false
SparseRep: ellpack_block
OptimizedMapping: false
BlockSize: 8
RandomNumberGeneratorSeed: 40
"""


# the header SCALE-Sim's layout reader skips (custom layouts are off, so no rows follow)
LAYOUT_HEADER = ("Layer name,IFMAP Height Intraline Factor,IFMAP Width Intraline Factor,Filter Height Intraline "
                 "Factor,Filter Width Intraline Factor,Channel Intraline Factor,Num Filter Intraline Factor,\n")


def _check_scalesim() -> None:
    try:
        import numpy
        import scalesim  # noqa: F401
    except ImportError:
        raise InputError(MISSING_EXTRA) from None
    major, minor = (int(x) for x in numpy.__version__.split(".")[:2])
    if (major, minor) >= (2, 4):
        problem = (f"scalesim 3.0 fails under NumPy {numpy.__version__} (it converts arrays to int, which NumPy "
                   f"2.4 refuses); pip install 'numpy<2.4' (the [gemm] extra pins it)")
        raise InputError(f"generate gemm: {problem}").with_parts(problem)


def scalesim_cycles(gemms: list[tuple[str, int, int, int]], array: ArraySpec) -> list[int]:
    """Cycles SCALE-Sim reports for each ``(name, M, N, K)`` GEMM.

    SCALE-Sim takes about a second per 5,000 cycles it simulates, so each distinct shape runs
    once (one SCALE-Sim run for all of them) and its cycles are kept under
    ``$SIMPY_ASTRA_CACHE/scalesim/`` per array, dataflow, SRAM and SCALE-Sim version: the same
    layer on the same array is never simulated twice (a GEMM's cycles do not depend on others).
    """
    _check_scalesim()
    key = hashlib.sha256(repr((array, version("scalesim"))).encode()).hexdigest()[:20]
    cache_path = os.path.join(cache_root(), "scalesim", f"{key}.json")
    known = _read_cache(cache_path)
    shapes = [f"{m}x{n}x{k}" for _, m, n, k in gemms]
    todo = list(dict.fromkeys(s for s in shapes if s not in known))
    if todo:
        got = _run_scalesim([(f"gemm_{s}", *map(int, s.split("x"))) for s in todo], array)
        known = {**_read_cache(cache_path), **dict(zip(todo, got, strict=True))}
        _write_cache(cache_path, known)
    return [known[s] for s in shapes]


def _read_cache(path: str) -> dict[str, int]:
    try:
        with open(path) as f:
            data = json.load(f)
        return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(path: str, known: dict[str, int]) -> None:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(known, f, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass  # the cache only saves time


def _run_scalesim(gemms: list[tuple[str, int, int, int]], array: ArraySpec) -> list[int]:
    """One SCALE-Sim run over ``(name, M, N, K)`` GEMMs: their cycles in order."""
    # deferred: scalesim (and numpy) is an optional extra; only SCALE-Sim GEMM timing needs it
    from scalesim.scale_sim import scalesim

    with tempfile.TemporaryDirectory(prefix="simpy-astra-scalesim-") as tmp:
        cfg, topo, layout = (os.path.join(tmp, f) for f in ("arch.cfg", "gemms.csv", "layout.csv"))
        with open(cfg, "w") as f:
            f.write(array.config_text())
        with open(topo, "w") as f:
            f.write("Layer, M, N, K,\n")
            f.writelines(f"{name}, {m}, {n}, {k},\n" for name, m, n, k in gemms)
        with open(layout, "w") as f:
            f.write(LAYOUT_HEADER)
        with contextlib.redirect_stdout(io.StringIO()):
            sim = scalesim(save_disk_space=True, verbose=False, config=cfg, topology=topo, layout=layout,
                           input_type_gemm=True)
            sim.run_scale(top_path=os.path.join(tmp, "out"))
        return read_compute_report(os.path.join(tmp, "out", "simpy_astra", "COMPUTE_REPORT.csv"),
                                   array.include_prefetch)


def read_compute_report(path: str, include_prefetch: bool = False) -> list[int]:
    """Per-layer cycles of a SCALE-Sim COMPUTE_REPORT.csv (``Total Cycles``, or ``Total Cycles
    (incl. prefetch)``)."""
    with open(path, newline="") as f:
        rows = [[c.strip() for c in r] for r in csv.reader(f) if r]
    header = rows[0]
    column = header.index("Total Cycles (incl. prefetch)" if include_prefetch else "Total Cycles")
    return [int(float(r[column])) for r in rows[1:]]


def scalesim_cycles_about(m: int, n: int, k: int, array: ArraySpec) -> int:
    """About the cycles SCALE-Sim steps through for one GEMM: the array's folds times each
    fold's stream plus its fill."""
    rows, cols = array.rows, array.cols
    folds, stream = {"ws": (-(-k // rows) * -(-n // cols), m), "os": (-(-m // rows) * -(-n // cols), k),
                     "is": (-(-k // rows) * -(-m // cols), n)}[array.dataflow]
    return folds * (stream + rows + cols)
