"""ASTRA-sim 1.0 text workloads (``Resnet50_DataParallel.txt`` ...) and their Chakra conversion.

The format: line 1 is the parallelism type (``DATA``, ``MODEL``, ``HYBRID_DATA_MODEL``,
``HYBRID_MODEL_DATA``, ``HYBRID_DLRM`` / ``HYBRID_DLRM_ENHANCED`` followed by the index of the
last bottom-MLP layer, ``MICRO``), line 2 the layer count, then one line per layer::

    name  dep  fwd_ns fwd_comm fwd_bytes  ig_ns ig_comm ig_bytes  wg_ns wg_comm wg_bytes  update

The conversion builds the same graphs, node ids, names, attributes and dependency order as
Chakra's text converter (``chakra_converter Text``), so that the traces it writes are
byte-identical to that tool's and simulate to the same figures. Chakra's quirks are kept on
purpose because published ET sets were made with them: node ids keep counting across NPUs,
a ``NONE`` communication in a place that always gets a collective (data-parallel weight
gradients, model-parallel activations) becomes a zero-byte all-reduce, and the layer count in
the header (not the number of lines) decides where the model-parallel input-gradient
collective is left out. Inputs on which Chakra would crash are :class:`InputError`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.cli.args import ArgumentParser
from simpy_astra.errors import InputError, Param
from simpy_astra.infra import files
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    COMM_COLL_NODE,
    COMP_NODE,
    REDUCE_SCATTER,
)
from simpy_astra.workloads.generated import materialise
from simpy_astra.workloads.trace_output import (
    MAX_TRACE_NPUS,
    TraceFiles,
    check_npu_count,
    check_prefix,
    unwritable,
)

# what Chakra's text converter stores in each file's metadata (the reference ETs carry this label)
METADATA_SCHEMA_LABEL = "1.0.2-chakra.0.0.4"

COMM_TYPES: dict[str, int] = {
    "ALLREDUCE": ALL_REDUCE,
    "ALLTOALL": ALL_TO_ALL,
    "ALLGATHER": ALL_GATHER,
    "REDUCESCATTER": REDUCE_SCATTER,
}
"""Text comm type -> Chakra collective; ``NONE`` maps to all-reduce where a collective is always made."""
NO_COMM = "NONE"
#: Chakra's fields: sizes are int64 attributes, compute times the uint64 ``duration_micros``
_INT64_MAX = 2**63 - 1

LAYER_COLUMNS = 12
PARALLELISMS = ("MICRO", "DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_DLRM",
                "HYBRID_DLRM_ENHANCED")


@dataclass(frozen=True)
class TextLayer:
    """One layer line: compute times in ns (the 1.0 format's cycles), collectives in bytes."""

    name: str
    fwd_compute_ns: int
    fwd_comm: str
    fwd_comm_bytes: int
    ig_compute_ns: int
    ig_comm: str
    ig_comm_bytes: int
    wg_compute_ns: int
    wg_comm: str
    wg_comm_bytes: int
    update_time: str  # kept as text: Chakra does not use it
    line_no: int


@dataclass(frozen=True)
class TextWorkload:
    path: str
    text: str  # the file's text, stored in each ET's metadata as Chakra does
    parallelism: str
    declared_layers: int  # the header's count; Chakra uses it, not len(layers), in places
    last_bottom_layer: int | None  # HYBRID_DLRM only
    layers: tuple[TextLayer, ...]


def _parse_layer(path: str, line_no: int, line: str) -> TextLayer:
    cols = line.split()
    if len(cols) < LAYER_COLUMNS:
        raise InputError(f"{path}:{line_no}: layer line has {len(cols)} columns, expected {LAYER_COLUMNS} "
                         f"(name dep fwd_ns fwd_comm fwd_bytes ig_ns ig_comm ig_bytes wg_ns wg_comm "
                         f"wg_bytes update)")
    ints = {}
    for index, what in ((2, "forward compute"), (4, "forward comm size"), (5, "input-gradient compute"),
                        (7, "input-gradient comm size"), (8, "weight-gradient compute"),
                        (10, "weight-gradient comm size")):
        try:
            ints[index] = int(cols[index])
        except ValueError:
            raise InputError(f"{path}:{line_no}: column {index + 1} ({what}) of layer {cols[0]!r} is "
                             f"{cols[index]!r}; expected an integer") from None
        if not 0 <= ints[index] <= _INT64_MAX:  # Chakra would wrap or crash writing it
            raise InputError(f"{path}:{line_no}: column {index + 1} ({what}) of layer {cols[0]!r} is "
                             f"{cols[index]}; expected an integer from 0 to {_INT64_MAX} (Chakra's 64-bit field)")
    for index, what in ((3, "forward comm type"), (6, "input-gradient comm type"), (9, "weight-gradient comm type")):
        if cols[index] != NO_COMM and cols[index] not in COMM_TYPES:
            # Chakra turns any unknown word into an all-reduce: a typo would change the workload
            close = [t for t in COMM_TYPES if t.startswith(cols[index][:6].upper())]
            hint = f"; did you mean {close[0]}?" if close else ""
            raise InputError(f"{path}:{line_no}: column {index + 1} ({what}) of layer {cols[0]!r} is "
                             f"{cols[index]!r}; expected one of {', '.join([*COMM_TYPES, NO_COMM])}{hint}")
    return TextLayer(cols[0], ints[2], cols[3], ints[4], ints[5], cols[6], ints[7], ints[8], cols[9],
                     ints[10], cols[11], line_no)


def parse_text_workload(path: str) -> TextWorkload:
    """Read an ASTRA-sim 1.0 text workload; every malformed line is an InputError naming it."""
    data = files.read_bytes(path, "ASTRA-sim 1.0 text workload", files.LOG_LIMIT_BYTES)
    try:
        text = data.decode("utf-8-sig")  # an editor's "UTF-8 with BOM": dropped, as every input file's
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: {files.not_utf8_at(data, exc.start)}; expected an ASTRA-sim 1.0 text "
                         f"workload") from None
    lines = text.splitlines()
    header = lines[0].split() if lines else []
    if not header:
        raise InputError(f"{path}:1: missing the parallelism type (one of {', '.join(PARALLELISMS)})")
    parallelism = header[0]
    if parallelism == "HYBRID_TRANSFORMER":
        raise InputError(f"{path}:1: parallelism HYBRID_TRANSFORMER is not supported (Chakra's text "
                         f"converter rejects it too); use 'simpy-astra generate transformer' or convert the "
                         f"model to DATA/MODEL/HYBRID_* layers")
    if parallelism not in PARALLELISMS:
        raise InputError(f"{path}:1: unknown parallelism type {parallelism!r}; use one of "
                         f"{', '.join(PARALLELISMS)}")
    last_bottom = None
    if parallelism.startswith("HYBRID_DLRM"):
        try:
            last_bottom = int(header[1])
        except (IndexError, ValueError):
            raise InputError(f"{path}:1: {parallelism} needs the index of the last bottom-MLP layer after "
                             f"it (e.g. '{parallelism} 4')") from None
    try:
        declared = int(lines[1].strip())
    except (IndexError, ValueError):
        raise InputError(f"{path}:2: expected the number of layers (an integer)") from None
    if declared < 0:
        raise InputError(f"{path}:2: the number of layers is {declared}; expected an integer >= 0")
    layers = tuple(_parse_layer(path, no, line) for no, line in enumerate(lines[2:], start=3) if line.strip())
    if not layers:
        raise InputError(f"{path}: no layer lines after the two header lines")
    if declared != len(layers):  # Chakra's converter reads `declared` lines: the rest is lost or missing
        raise InputError(f"{path}:2: the header says {declared} layer{'' if declared == 1 else 's'} but "
                         f"{len(layers)} layer line{' follows' if len(layers) == 1 else 's follow'}; make the number on line 2 match the layer lines")
    if last_bottom is not None and not 0 <= last_bottom < len(layers):
        raise InputError(f"{path}:1: last bottom layer {last_bottom} is not a layer index (0..{len(layers) - 1})")
    return TextWorkload(path, text, parallelism, declared, last_bottom, layers)


@dataclass
class _LayerNodes:
    """Ids of the nodes last emitted for one layer (None: not emitted, or reset)."""

    fwd_comp: int | None = None
    fwd_comm: int | None = None
    ig_comp: int | None = None
    ig_comm: int | None = None
    wg_comp: int | None = None
    wg_comm: int | None = None


@dataclass
class _Emitter:
    """Appends nodes to the current NPU's list; ids keep counting across NPUs, as in Chakra."""

    num_dims: int | None
    next_id: int = 0
    nodes: list = field(default_factory=list)

    def compute(self, layer: TextLayer, phase: str, duration_ns: int, deps: list[int]) -> int:
        return self._emit(f"COMP_NODE_{layer.name}_{phase}", COMP_NODE, deps, duration_ns, None)

    def collective(self, name: str, comm: str, size_bytes: int, deps: list[int]) -> int:
        attrs: dict[str, object] = {"comm_type": COMM_TYPES.get(comm, ALL_REDUCE), "comm_size": size_bytes}
        if self.num_dims is not None:
            attrs["involved_dim"] = [True] * self.num_dims
        return self._emit(f"COMM_COLL_NODE_{name}_{comm}", COMM_COLL_NODE, deps, 0, attrs)

    def _emit(self, name: str, node_type: int, deps: list[int], duration: int, attrs) -> int:
        node_id = self.next_id
        self.next_id += 1
        self.nodes.append(make_node(node_id, name, node_type, deps=deps, duration_micros=duration, attrs=attrs))
        return node_id


def _micro(w: TextWorkload, em: _Emitter, st: list[_LayerNodes], passes: int) -> None:
    for _ in range(passes):
        for layer in w.layers:
            em.collective(layer.name, layer.wg_comm, layer.wg_comm_bytes, [])


def _data(w: TextWorkload, em: _Emitter, st: list[_LayerNodes], passes: int) -> None:
    layers, n = w.layers, len(w.layers)
    for _ in range(passes):
        for i, layer in enumerate(layers):
            deps = [st[i - 1].fwd_comp] if i else []
            if st[i].wg_comm is not None:
                deps.append(st[i].wg_comm)
            st[i].fwd_comp = last_fwd = em.compute(layer, "FWD", layer.fwd_compute_ns, deps)
        for k in range(n):
            i = n - 1 - k
            layer = layers[i]
            wg = em.compute(layer, "BWD_WG", layer.wg_compute_ns, [last_fwd] if k == 0 else [st[i + 1].ig_comp])
            st[i].wg_comm = em.collective(layer.name, layer.wg_comm, layer.wg_comm_bytes, [wg])
            if k != n - 1:
                st[i].ig_comp = em.compute(layer, "BWD_IG", layer.ig_compute_ns, [wg])
    for s in st:
        s.wg_comm = None


def _need(w: TextWorkload, node: int | None, what: str) -> int:
    if node is None:  # Chakra crashes here
        raise InputError(f"{w.path}:2: {w.parallelism} graph needs {what}, which the layer lines do not "
                         f"provide; make the header's layer count ({w.declared_layers}) match the "
                         f"{len(w.layers)} layer lines")
    return node


def _model_or_hybrid(w: TextWorkload, em: _Emitter, st: list[_LayerNodes], passes: int) -> None:
    """MODEL, HYBRID_DATA_MODEL and HYBRID_MODEL_DATA: activations travel between layers."""
    layers, n = w.layers, len(w.layers)
    hybrid = w.parallelism != "MODEL"
    ig_suffix = "_IG_COMM_" if w.parallelism == "HYBRID_DATA_MODEL" else ""
    for _ in range(passes):
        for i, layer in enumerate(layers):
            before = st[i].wg_comm if hybrid else st[i].wg_comp
            prev = [st[i - 1].fwd_comm] if i else []
            if hybrid:
                deps = ([before] if before is not None else []) + prev
            else:
                deps = prev + ([before] if before is not None else [])
            st[i].fwd_comp = fwd = em.compute(layer, "FWD", layer.fwd_compute_ns, deps)
            st[i].fwd_comm = last_fwd_comm = em.collective(layer.name, layer.fwd_comm, layer.fwd_comm_bytes,
                                                           [fwd])
        for k in range(n):
            i = n - 1 - k
            layer = layers[i]
            if k == 0:
                deps = [last_fwd_comm]
            else:
                deps = [_need(w, st[i + 1].wg_comp, f"{layers[i + 1].name}'s weight gradient"),
                        _need(w, st[i + 1].ig_comm, f"{layers[i + 1].name}'s input-gradient collective")]
            ig = em.compute(layer, "BWD_IG", layer.ig_compute_ns, deps)
            if k != w.declared_layers - 1:
                st[i].ig_comm = em.collective(layer.name + ig_suffix, layer.ig_comm, layer.ig_comm_bytes, [ig])
            st[i].wg_comp = wg = em.compute(layer, "BWD_WG", layer.wg_compute_ns, [ig])
            if hybrid:
                st[i].wg_comm = em.collective(layer.name, layer.wg_comm, layer.wg_comm_bytes, [wg])
    for s in st:
        if hybrid:
            s.wg_comm = None
        else:
            s.wg_comp = None


def _dlrm(w: TextWorkload, em: _Emitter, st: list[_LayerNodes], passes: int) -> None:
    """Embedding all-to-all around data-parallel bottom and top MLPs."""
    layers, n = w.layers, len(w.layers)
    bottom = w.last_bottom_layer
    assert bottom is not None
    first = layers[0]
    for _ in range(passes):
        for i, layer in enumerate(layers):
            deps = []
            if st[i].wg_comm is not None:
                deps.append(st[i].wg_comm)
            elif st[i].wg_comp is not None:
                deps.append(st[i].wg_comp)
            if i:
                deps.append(st[i - 1].fwd_comp)
            if i == bottom:
                deps.append(_need(w, st[0].fwd_comm, f"an ALLTOALL forward collective on {first.name}"))
            st[i].fwd_comp = last_fwd = em.compute(layer, "FWD", layer.fwd_compute_ns, deps)
            if layer.fwd_comm == "ALLTOALL":
                st[i].fwd_comm = em.collective(layer.name, layer.fwd_comm, layer.fwd_comm_bytes, [last_fwd])
        for k in range(n):
            i = n - 1 - k
            layer = layers[i]
            if k == 0:
                deps = [last_fwd]
            else:
                deps = [d for d in (st[i + 1].ig_comp, st[i].ig_comm) if d is not None]
            st[i].wg_comp = wg = em.compute(layer, "BWD_WG", layer.wg_compute_ns, deps)
            if layer.wg_comm != "NONE":
                st[i].wg_comm = em.collective(layer.name, layer.wg_comm, layer.wg_comm_bytes, [wg])
            ig = None
            if k != n - 1:
                st[i].ig_comp = ig = em.compute(layer, "BWD_IG", layer.ig_compute_ns, [wg])
            if i == bottom + 1:
                st[0].ig_comm = em.collective(first.name, first.ig_comm, first.ig_comm_bytes,
                                              [_need(w, ig, f"an input gradient on layer {i}")])
    for s in st:
        s.wg_comm = s.wg_comp = s.ig_comm = s.ig_comp = None


_BUILDERS: dict[str, Callable[[TextWorkload, _Emitter, list[_LayerNodes], int], None]] = {
    "MICRO": _micro,
    "DATA": _data,
    "MODEL": _model_or_hybrid,
    "HYBRID_DATA_MODEL": _model_or_hybrid,
    "HYBRID_MODEL_DATA": _model_or_hybrid,
    "HYBRID_DLRM": _dlrm,
    "HYBRID_DLRM_ENHANCED": _dlrm,
}


#: layers x passes one conversion builds per NPU (a node graph of ~6 nodes each, held in memory)
MAX_LAYER_PASSES = 1_000_000
#: the most dimensions a trace's network may have: 2 or more NPUs each, at most MAX_TRACE_NPUS
MAX_DIMS = MAX_TRACE_NPUS.bit_length() - 1


def convert_text_workload(workload: TextWorkload, num_npus: int, num_passes: int,
                          num_dims: int | None = None) -> list[list]:
    """Per-NPU lists of Chakra ``Node`` messages, as Chakra's text converter would write them.

    ``num_dims`` (optional) adds ``involved_dim`` = all true to every collective, as older
    converters did; without it the collectives span every dimension anyway.
    """
    if num_npus < 1:
        raise InputError(f"--num-npus must be >= 1 (got {num_npus})")
    if num_passes < 1:
        raise InputError(f"--num-passes must be >= 1 (got {num_passes})")
    if num_passes * len(workload.layers) > MAX_LAYER_PASSES:  # each is ~6 nodes on every NPU
        raise InputError(f"--num-passes (num_passes in a scenario): {num_passes} passes of "
                         f"{len(workload.layers)} layer{'' if len(workload.layers) == 1 else 's'} would build {num_passes * len(workload.layers):,} "
                         f"layer instances per NPU; at most {MAX_LAYER_PASSES:,} fit in memory")
    if num_dims is not None and not 1 <= num_dims <= MAX_DIMS:  # [True] * 10^9 a collective filled the memory
        raise InputError(f"--num-dims must be from 1 to {MAX_DIMS} (got {num_dims}): each dimension of a network "
                         f"holds 2 or more NPUs, and a trace is written for at most {MAX_TRACE_NPUS:,} NPUs = "
                         f"2^{MAX_DIMS}")
    emitter = _Emitter(num_dims)
    state = [_LayerNodes() for _ in workload.layers]  # persists across NPUs, as Chakra's layers do
    per_npu = []
    for _ in range(num_npus):
        emitter.nodes = []
        _BUILDERS[workload.parallelism](workload, emitter, state, num_passes)
        per_npu.append(emitter.nodes)
    return per_npu


def write_text_ets(input_path: str, prefix: str, num_npus: int, num_passes: int,
                   num_dims: int | None = None) -> TextWorkload:
    """Convert ``input_path`` and write ``prefix.{npu}.et`` for every NPU."""
    workload = parse_text_workload(input_path)
    check_npu_count(num_npus, Param("num_npus"))
    check_prefix(prefix)
    per_npu = convert_text_workload(workload, num_npus, num_passes, num_dims)
    write_converted_ets(prefix, per_npu, workload)
    return workload


def write_converted_ets(prefix: str, per_npu: list[list], workload: TextWorkload) -> None:
    """``prefix.{npu}.et`` of converted nodes, with Chakra's text-converter metadata."""
    meta = {"schema": METADATA_SCHEMA_LABEL, "input_file": workload.text}
    with TraceFiles() as files:
        files.makedirs(prefix)
        for npu, nodes in enumerate(per_npu):
            try:
                write_et(files.add(f"{prefix}.{npu}.et"), nodes, version="", metadata_attrs=meta)
            except OSError as exc:
                raise unwritable(f"cannot write {prefix}.{npu}.et ({exc.strerror or exc})") from None


def generate(params: dict[str, Any], prefix: str) -> None:
    """Generator entry (``workloads.generated``): ``{input, sha256, num_npus, num_passes, num_dims}``."""
    write_text_ets(params["input"], prefix, params["num_npus"], params["num_passes"], params.get("num_dims"))


def text_workload_prefix(path: str, num_npus: int, num_passes: int = 1, num_dims: int | None = None) -> str:
    """ET prefix of ``path`` converted for ``num_npus`` NPUs, cached by the file's content."""
    parse_text_workload(path)  # a cached conversion is not re-read: check the file every time
    digest = hashlib.sha256(files.read_bytes(path, "ASTRA-sim 1.0 text workload", files.LOG_LIMIT_BYTES)).hexdigest()
    spec = {"generate": "text", "input": os.path.abspath(path), "sha256": digest, "num_npus": num_npus,
            "num_passes": num_passes, "num_dims": num_dims}
    return materialise(spec, where=path).prefix


def main(argv: list[str]) -> int:
    """``simpy-astra convert text --input F --output PREFIX --num-npus N --num-passes P [--num-dims D]``."""
    p = ArgumentParser(prog="simpy-astra convert text",
                                description="Convert an ASTRA-sim 1.0 text workload to Chakra ETs "
                                            "(same traces as Chakra's text converter).")
    p.add_argument("--input", required=True, help="ASTRA-sim 1.0 text workload (.txt)")
    p.add_argument("--output", required=True, help="ET prefix: writes PREFIX.{npu}.et")
    p.add_argument("--num-npus", type=int, required=True, help="number of NPUs (one ET file each)")
    p.add_argument("--num-passes", type=int, required=True, help="training iterations to unroll")
    p.add_argument("--num-dims", type=int, default=None,
                   help="optional: tag every collective with involved_dim = [true] * D")
    args = p.parse_args(argv)
    workload = write_text_ets(args.input, args.output, args.num_npus, args.num_passes, args.num_dims)
    print(f"wrote {args.output}.{{0..{args.num_npus - 1}}}.et ({workload.parallelism}, "
          f"{len(workload.layers)} layer{'' if len(workload.layers) == 1 else 's'}, {args.num_passes} pass{'' if args.num_passes == 1 else 'es'})")
    return 0
