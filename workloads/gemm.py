"""GEMM layers timed by SCALE-Sim: the ISCA'22 ASTRA-sim tutorial's workload generator.

Input is the tutorial's ``Layer, m, n, k`` CSV (``m``: mini-batch rows, sharded by data
parallelism; ``n``: output features, sharded by model parallelism; ``k``: input features)::

    Layer,m,n,k
    MLP_Bottom_0,1024,128,512

For every layer the forward, input-gradient and weight-gradient GEMMs that one NPU runs under
the chosen parallelism are handed to SCALE-Sim (the ``scalesim`` package, extra ``.[gemm]``)
on a systolic array of the given size and dataflow, and its cycle counts become the layer's
compute times. The GEMM shapes, the collectives and their
sizes are those of ASTRA-sim's ``gen_astrasim_workload_input.py`` (P NPUs, Q packages, R = P/Q
NPUs per package, ``d`` bytes per element)::

    strategy            forward GEMM (M x K . K x N)     collectives (fwd / in-grad / w-grad)
    DATA                m/P x k . k x n                  - / - / all-reduce n*k*d
    MODEL               m x k . k x n/P                  all-gather m*n*d/P / reduce-scatter m*k*d / -
    HYBRID_DATA_MODEL   m/Q x k . k x n/R                all-gather m*n*d/P / reduce-scatter m*k*d/Q /
                                                         all-reduce n*k*d/R
    HYBRID_MODEL_DATA   m/R x k . k x n/Q                all-gather m*n*d/P / reduce-scatter m*k*d/R /
                                                         all-reduce n*k*d/Q

The input gradient is ``M x N . N x K`` and the weight gradient ``K x M . M x N`` of the same
shard. The result is an ASTRA-sim 1.0 text workload (``PREFIX.txt``, exactly the generator's
format, compute times in cycles), and Chakra ETs converted from it (``PREFIX.{npu}.et``, the
graphs of :mod:`workloads.text_workload`) whose compute nodes last ``cycles / clock`` (default 1
GHz) in whole microseconds, the unit of a Chakra node's ``duration_micros``. (Chakra's own text
converter copies the cycles into ``duration_micros`` unchanged, so the text file run through it,
or as ``workload: PREFIX.txt``, computes 1,000 times longer at 1 GHz.)

SCALE-Sim runs once per pass (all layers in one topology file), with ``InterfaceBandwidth:
CALC`` (DRAM bandwidth sized so the array never stalls, as the tutorial's ``google.cfg``);
the cycles taken are COMPUTE_REPORT's ``Total Cycles`` (SCALE-Sim v2's figure, which the
tutorial read; ``--include-prefetch`` takes v3's ``Total Cycles (incl. prefetch)`` instead).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import hashlib
import io
import json
import os
import re
import tempfile
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from simpy_astra.cli.args import ArgumentParser
from simpy_astra.errors import InputError, Param, integer_fix
from simpy_astra.infra import files
from simpy_astra.workloads.generated import WorkloadLayout, cache_root
from simpy_astra.workloads.text_workload import (
    convert_text_workload,
    parse_text_workload,
    write_converted_ets,
)
from simpy_astra.workloads.trace_output import check_npu_count, check_prefix, unwritable

STRATEGIES = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA")
DATAFLOWS = ("ws", "os", "is")
PASSES = ("fwd", "ig", "wg")
DEFAULT_SRAM_KB = (6144, 6144, 2048)  # ifmap, filter, ofmap: the tutorial's google.cfg
UPDATE_DELAY = 100  # the generator's last numeric column ("delay for 1KB communication")
MISSING_EXTRA = "generate gemm needs SCALE-Sim: pip install 'simpy-astra[gemm]' (the scalesim package)"


@dataclass(frozen=True)
class GemmLayer:
    name: str
    m: int
    n: int
    k: int


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


def read_mnk(path: str) -> list[GemmLayer]:
    """The tutorial's CSV: a ``Layer,m,n,k`` header, then one GEMM per line (a fifth per-layer
    parallelism column, HYBRID_CUSTOMIZED's, is ignored: ``--parallel`` decides)."""
    text = files.read_text(path, "m,n,k file")
    rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r and any(c.strip() for c in r)]
    if not rows or [c.strip().lower() for c in rows[0][:4]] != ["layer", "m", "n", "k"]:
        raise InputError.in_file(f"{path}:1", "expected the header 'Layer,m,n,k'")
    layers = []
    for no, row in enumerate(rows[1:], start=2):
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
        layers.append(GemmLayer(name, m, n, k))
    if not layers:
        raise InputError.in_file(path, "no layers after the header")
    return layers


def _of_job(problem: str) -> InputError:
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
        raise _of_job(f"layer {layer.name}: m={layer.m}, n={layer.n} leave an empty shard under {strategy} "
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


@dataclass(frozen=True)
class GemmWorkload:
    strategy: str
    layers: tuple[GemmLayer, ...]
    cycles: tuple[dict[str, int], ...]  # per layer: pass -> cycles
    comms: tuple[dict[str, tuple[str, int]], ...]

    def text(self) -> str:
        """The ASTRA-sim 1.0 text workload, as ``gen_astrasim_workload_input.py`` writes it."""
        lines = [self.strategy, str(len(self.layers))]
        for layer, cyc, comm in zip(self.layers, self.cycles, self.comms, strict=True):
            cols: list[Any] = [layer.name, -1]
            for p in PASSES:
                cols += [cyc[p], comm[p][0], comm[p][1]]
            cols += [UPDATE_DELAY, self.strategy]
            lines.append("\t".join(str(c) for c in cols))
        return "\n".join(lines)


#: the array clocks (GHz) a workload may state: wide of any chip, so that what is outside is a
#: typo or a unit slip (at 1e-300 GHz a layer's microseconds outgrow 64 bits)
CLOCK_GHZ_RANGE = (1e-3, 1e3)


def check_clock(value: Any) -> float:
    """``value`` as the array clock in GHz, refused (as ``clock_ghz``) unless a finite number in
    :data:`CLOCK_GHZ_RANGE` (nan failed to convert to whole microseconds, inf made every layer
    the 1 us floor)."""
    low, high = CLOCK_GHZ_RANGE
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InputError.of_params(Param("clock_ghz"), f": must be a clock in GHz from {low:g} to {high:g} "
                                                       f"(got {value!r})")
    return float(value)


def scalesim_cycles_about(m: int, n: int, k: int, array: ArraySpec) -> int:
    """About the cycles SCALE-Sim steps through for one GEMM: the array's folds times each
    fold's stream plus its fill."""
    rows, cols = array.rows, array.cols
    folds, stream = {"ws": (-(-k // rows) * -(-n // cols), m), "os": (-(-m // rows) * -(-n // cols), k),
                     "is": (-(-k // rows) * -(-m // cols), n)}[array.dataflow]
    return folds * (stream + rows + cols)


def _check_scalesim_size(layers: list[GemmLayer], shapes: list[dict[str, tuple[int, int, int]]],
                         array: ArraySpec) -> None:
    """Refuse before SCALE-Sim starts a GEMM it cannot finish or hold: it ended on numpy's
    MemoryError or 'Maximum allowed dimension exceeded', or ran for hours, naming no layer."""
    limit = min(MAX_SCALESIM_CYCLES, MAX_SCALESIM_CELLS // (array.rows + array.cols))
    for layer, passes in zip(layers, shapes, strict=True):
        for p in PASSES:
            cycles = scalesim_cycles_about(*passes[p], array)
            if cycles > limit:
                m, n, k = passes[p]
                raise _of_job(f"layer {layer.name}: its {p} GEMM on one NPU ({m}x{n}x{k}) is about {cycles:,} "
                              f"SCALE-Sim cycles on the {array.rows}x{array.cols} array, past the {limit:,} timed "
                              f"(minutes each, or GBs of tables); split the layer, or spread it over more NPUs")


def build(layers: list[GemmLayer], strategy: str, num_npus: int, array: ArraySpec, num_packages: int = 1,
          dtype_bytes: int = 2) -> GemmWorkload:
    if strategy not in STRATEGIES:
        raise InputError.of_params(Param("parallel"), f": expected one of {', '.join(STRATEGIES)} (got {strategy!r})")
    if num_packages != 1 and not strategy.startswith("HYBRID_"):
        raise InputError.of_params(Param("num_packages"), f" {num_packages}: only HYBRID_DATA_MODEL and "
                                   f"HYBRID_MODEL_DATA split the NPUs into packages; {strategy} never reads it (remove it)")
    if num_npus < 1 or num_packages < 1 or num_npus % num_packages:
        raise InputError.of_params(Param("num_npus"), f" {num_npus} must be a positive multiple of ",
                                   Param("num_packages"), f" {num_packages}")
    if dtype_bytes < 1:
        raise InputError.of_params(Param("datatype_size"), f" must be >= 1 byte (got {dtype_bytes})")
    shapes = [pass_gemms(layer, strategy, num_npus, num_packages) for layer in layers]
    _check_scalesim_size(layers, shapes, array)
    cycles: list[dict[str, int]] = [{} for _ in layers]
    for p in PASSES:
        got = scalesim_cycles([(f"{layer.name}_{p}", *s[p]) for layer, s in zip(layers, shapes, strict=True)],
                              array)
        for per_layer, c in zip(cycles, got, strict=True):
            per_layer[p] = c
    comms = [collectives(layer, strategy, num_npus, num_packages, dtype_bytes) for layer in layers]
    return GemmWorkload(strategy, tuple(layers), tuple(cycles), tuple(comms))


def write(workload: GemmWorkload, prefix: str, num_npus: int, fmt: str = "et", num_passes: int = 1,
          clock_ghz: float = 1.0) -> list[str]:
    """Write ``PREFIX.txt`` (and, for ``et``, ``PREFIX.{npu}.et``); returns the paths written."""
    folder = os.path.dirname(prefix)
    if folder:
        os.makedirs(folder, exist_ok=True)
    text_path = f"{prefix}.txt"
    try:
        with open(text_path, "w") as f:
            f.write(workload.text())
    except OSError as exc:
        raise unwritable(f"cannot write {text_path} ({exc.strerror or exc})") from None
    if fmt == "text":
        return [text_path]
    write_ets(text_path, prefix, num_npus, num_passes, clock_ghz)
    return [text_path] + [f"{prefix}.{npu}.et" for npu in range(num_npus)]


def cycles_to_micros(cycles: int, clock_ghz: float) -> int:
    """A Chakra compute node's ``duration_micros`` for ``cycles`` at ``clock_ghz``: whole
    microseconds (the field's unit), at least 1 so no layer takes no time."""
    return max(1, int(cycles / (clock_ghz * 1000) + 0.5))


def write_ets(text_path: str, prefix: str, num_npus: int, num_passes: int, clock_ghz: float = 1.0) -> None:
    """``PREFIX.{npu}.et`` from the text workload, as Chakra's text converter builds them, but with
    each compute time turned from cycles into microseconds (Chakra would read the cycles as
    microseconds, making every layer 1,000 times slower at 1 GHz)."""
    text = parse_text_workload(text_path)
    layers = tuple(dataclasses.replace(
        layer, fwd_compute_ns=cycles_to_micros(layer.fwd_compute_ns, clock_ghz),
        ig_compute_ns=cycles_to_micros(layer.ig_compute_ns, clock_ghz),
        wg_compute_ns=cycles_to_micros(layer.wg_compute_ns, clock_ghz)) for layer in text.layers)
    per_npu = convert_text_workload(dataclasses.replace(text, layers=layers), num_npus, num_passes)
    write_converted_ets(prefix, per_npu, text)


PARAMS = {"mnk", "mnk_sha256", "parallel", "num_npus", "array", "dataflow", "sram", "num_packages",
          "datatype_size", "num_passes", "include_prefetch", "clock_ghz"}
PATH_PARAMS = ("mnk",)
#: the parameters a scenario gives (mnk_sha256 is the digest :func:`prepare` adds)
GIVEN_PARAMS = tuple(sorted(PARAMS - {"mnk_sha256"}))


def prepare(params: dict[str, Any], where: str) -> dict[str, Any]:
    """Scenario parameters made cache-safe: the m,n,k file's digest joins them."""
    unknown = set(params) - PARAMS
    if unknown:
        raise InputError(f"{where}: generate gemm does not take {sorted(unknown)}; use "
                         f"{', '.join(GIVEN_PARAMS)}")
    mnk = params.get("mnk")
    if not isinstance(mnk, str):
        raise InputError(f"{where}: generate gemm needs 'mnk: LAYERS.csv' (the Layer,m,n,k file)")
    try:
        digest = hashlib.sha256(files.read_bytes(mnk, "m,n,k file")).hexdigest()
    except InputError as exc:
        raise InputError(f"{where}.mnk: {exc}") from None
    return {**params, "mnk_sha256": digest}


def layout(params: dict[str, Any]) -> WorkloadLayout:
    """Its ranks, ``num_npus``, known before SCALE-Sim runs: a network of another size was
    refused only after minutes of timing a large layer on each NPU's share. It plays no
    message one by one: every strategy's exchanges are all-reduces, all-gathers and
    reduce-scatters (:func:`collectives`), and data parallelism's only all-reduces."""
    npus = params.get("num_npus")
    return WorkloadLayout(ranks=npus if isinstance(npus, int) and not isinstance(npus, bool) and npus >= 1 else None,
                          plays_messages=False, gathers=params.get("parallel") != "DATA")


def generate(params: dict[str, Any], prefix: str) -> None:
    """Scenario generator: ``{generate: gemm, mnk: layers.csv, parallel: DATA, num_npus: 16,
    array: 32x32, dataflow: ws, ...}`` (the CLI flags with underscores)."""
    def integer(key: str, default: int) -> int:
        value = params.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError.of_params(Param(key), f": must be an integer (got {value!r}){integer_fix(value)}")
        return value

    if "num_npus" not in params or "parallel" not in params:
        problem = "generate gemm needs 'parallel' and 'num_npus'"
        raise InputError(f"workload: {problem}").with_parts(problem)
    array = ArraySpec.parse(str(params.get("array", "32x32")), str(params.get("dataflow", "ws")),
                            params.get("sram"), bool(params.get("include_prefetch", False)))
    num_npus = integer("num_npus", 0)
    clock = check_clock(params.get("clock_ghz", 1.0))  # before SCALE-Sim times every layer
    workload = build(read_mnk(params["mnk"]), str(params["parallel"]), num_npus, array,
                     integer("num_packages", 1), integer("datatype_size", 2))
    write(workload, prefix, num_npus, "et", integer("num_passes", 1), clock)


def main(argv: list[str]) -> int:
    """``simpy-astra generate gemm --mnk LAYERS.csv --parallel S --num-npus N --array RxC ...``."""
    p = ArgumentParser(prog="simpy-astra generate gemm",
                                description="Time GEMM layers with SCALE-Sim and write the training workload "
                                            "(the ISCA'22 ASTRA-sim tutorial's generator).")
    p.add_argument("--mnk", required=True, help="CSV with the header Layer,m,n,k")
    p.add_argument("--parallel", required=True, choices=STRATEGIES)
    p.add_argument("--num-npus", type=int, required=True)
    p.add_argument("--num-packages", type=int, default=1, help="packages for HYBRID_* (default 1)")
    p.add_argument("--array", default="32x32", help="systolic array ROWSxCOLS (default 32x32)")
    p.add_argument("--dataflow", default="ws", choices=DATAFLOWS, help="weight/output/input stationary")
    p.add_argument("--sram", default=None, metavar="IFMAP,FILTER,OFMAP",
                   help="SRAM sizes in kB (default 6144,6144,2048, the tutorial's google.cfg)")
    p.add_argument("--datatype-size", type=int, default=2, help="bytes per element (default 2)")
    p.add_argument("--include-prefetch", action="store_true",
                   help="take SCALE-Sim's 'Total Cycles (incl. prefetch)' instead of 'Total Cycles'")
    p.add_argument("--format", choices=("et", "text"), default="et",
                   help="et: PREFIX.txt and PREFIX.{npu}.et; text: only the ASTRA-sim 1.0 PREFIX.txt")
    p.add_argument("--num-passes", type=int, default=1, help="training iterations in the ETs (default 1)")
    p.add_argument("--clock-ghz", type=float, default=1.0,
                   help="array clock: ET compute time = cycles / clock, in whole us (default 1 GHz)")
    p.add_argument("--output", required=True, help="output prefix")
    args = p.parse_args(argv)
    check_prefix(args.output)
    check_npu_count(args.num_npus, Param("num_npus"))
    check_clock(args.clock_ghz)
    if args.format == "text" and args.num_passes != 1:
        raise InputError(f"--num-passes {args.num_passes}: --format text writes no ET, so no iterations (ASTRA-sim "
                         f"1.0 takes the passes when it runs a .txt: num_passes in a scenario); remove it, or write "
                         f"ETs")
    array = ArraySpec.parse(args.array, args.dataflow, args.sram, args.include_prefetch)
    workload = build(read_mnk(args.mnk), args.parallel, args.num_npus, array, args.num_packages,
                     args.datatype_size)
    paths = write(workload, args.output, args.num_npus, args.format, args.num_passes, args.clock_ghz)
    for layer, cyc in zip(workload.layers, workload.cycles, strict=True):
        print(f"{layer.name}: forward {cyc['fwd']}, input gradient {cyc['ig']}, weight gradient {cyc['wg']} cycles")
    shown = paths[0] if len(paths) == 1 else f"{paths[0]} and {args.output}.{{0..{args.num_npus - 1}}}.et"
    print(f"wrote {shown} ({args.parallel}, {len(workload.layers)} layers, {array.rows}x{array.cols} "
          f"{array.dataflow})")
    return 0
