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

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from typing import Any

from simpy_astra.cli.args import ArgumentParser
from simpy_astra.errors import InputError, Param, integer_fix
from simpy_astra.infra import files
from simpy_astra.report.output import say_wrapped
from simpy_astra.workloads.gemm_layers import (
    PASSES,
    STRATEGIES,
    GemmLayer,
    collectives,
    job_error,
    overridden_parallel,
    pass_gemms,
    read_mnk,
)
from simpy_astra.workloads.generated import WorkloadLayout
from simpy_astra.workloads.scalesim_timing import (
    DATAFLOWS,
    MAX_SCALESIM_CELLS,
    MAX_SCALESIM_CYCLES,
    ArraySpec,
    scalesim_cycles,
    scalesim_cycles_about,
)
from simpy_astra.workloads.text_workload import (
    convert_text_workload,
    parse_text_workload,
    write_converted_ets,
)
from simpy_astra.workloads.trace_output import check_npu_count, check_prefix, unwritable

UPDATE_DELAY = 100  # the generator's last numeric column ("delay for 1KB communication")


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
                raise job_error(f"layer {layer.name}: its {p} GEMM on one NPU ({m}x{n}x{k}) is about {cycles:,} "
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
    reduce-scatters (:func:`collectives`), and data parallelism's only all-reduces; each names
    no group, so it runs over every NPU."""
    npus, mnk, strategy = params.get("num_npus"), params.get("mnk"), params.get("parallel")
    try:  # a file that cannot be read stops the generation, naming it
        warnings = overridden_parallel(read_mnk(mnk), strategy, mnk) if strategy in STRATEGIES else []
    except InputError:
        warnings = []
    return WorkloadLayout(ranks=npus if isinstance(npus, int) and not isinstance(npus, bool) and npus >= 1 else None,
                          plays_messages=False, gathers=strategy != "DATA", gathers_on_every_rank=True,
                          warnings=tuple(warnings))


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
    layers = read_mnk(args.mnk)
    for warning in overridden_parallel(layers, args.parallel, args.mnk):
        say_wrapped(f"warning: {warning}")
    workload = build(layers, args.parallel, args.num_npus, array, args.num_packages, args.datatype_size)
    paths = write(workload, args.output, args.num_npus, args.format, args.num_passes, args.clock_ghz)
    for layer, cyc in zip(workload.layers, workload.cycles, strict=True):
        print(f"{layer.name}: forward {cyc['fwd']}, input gradient {cyc['ig']}, weight gradient {cyc['wg']} cycles")
    shown = paths[0] if len(paths) == 1 else f"{paths[0]} and {args.output}.{{0..{args.num_npus - 1}}}.et"
    print(f"wrote {shown} ({args.parallel}, {len(workload.layers)} layer{'' if len(workload.layers) == 1 else 's'}, {array.rows}x{array.cols} "
          f"{array.dataflow})")
    return 0
