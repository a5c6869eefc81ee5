"""Reading a PyTorch host execution trace (``ExecutionTraceObserver`` JSON, Chakra schema 0.0.4).

The trace is a call tree: every node names its caller in ``ctrl_deps`` and lists its arguments
in ``inputs``/``outputs`` (``values``, ``shapes``, ``types``). A tensor argument is recorded as
``[tensor_id, storage_id, offset, numel, elem_bytes, device]``, which is all we need for
message sizes and for the data edges between operators. Errors name the file and the node, so
a broken trace is fixed where it broke.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.infra.horizon import HORIZON_MICROS

PG_INIT = "process_group:init"
#: PyTorch's host-trace schemas that carry Chakra's 0.0.4 extensions (1.0.2 ... 1.1.x)
SCHEMA = re.compile(r"^\d+\.\d+\.\d+-chakra\.0\.0\.4$")
ROOT_NAMES = ("[pytorch|profiler|execution_trace|thread]", "[pytorch|profiler|execution_graph|thread]")
PROCESS_NAMES = ("[pytorch|profiler|execution_trace|process]", "[pytorch|profiler|execution_graph|process]")


@dataclass(frozen=True)
class Tensor:
    """One tensor argument: identity (for data edges) and size (for messages)."""

    tensor_id: int
    storage_id: int
    numel: int
    elem_bytes: int

    @property
    def size_bytes(self) -> int:
        return self.numel * self.elem_bytes


@dataclass
class Kernel:
    """A GPU kernel (a node with a ``cat``, as a linked host + device trace holds it), by launcher."""

    name: str
    dur_us: float
    collective: bool
    in_nelems: int | None = None
    dtype: str | None = None


@dataclass
class HostNode:
    """One host-trace node with what conversion reads of it."""

    id: int
    name: str
    parent: int
    raw: dict[str, Any]
    attrs: dict[str, Any] = field(default_factory=dict)
    children: list[int] = field(default_factory=list)
    #: the trace file it is in (for errors)
    source: str = ""

    @property
    def op_schema(self) -> str:
        return str(self.attrs.get("op_schema", ""))

    def values(self, side: str = "inputs") -> list[Any]:
        return list((self.raw.get(side) or {}).get("values") or [])

    def types(self, side: str = "inputs") -> list[str]:
        return [str(t) for t in (self.raw.get(side) or {}).get("types") or []]

    def tensors(self, side: str = "inputs") -> list[Tensor]:
        """Every tensor among ``side``'s arguments, nested lists flattened, in order."""
        found: list[Tensor] = []
        for value, kind in zip(self.values(side), self.types(side), strict=False):
            if "Tensor" in kind:
                _collect_tensors(value, found)
        for t in found:  # sizes become Chakra's 64-bit comm_size: none negative, none past it
            if t.numel < 0 or t.elem_bytes < 0 or t.size_bytes >= 2**63:
                raise InputError(f"{self.source}: node '{self.id} ({self.name})': {side} tensor {t.tensor_id} has numel "
                                 f"{t.numel} of {t.elem_bytes} bytes; a tensor has 0 .. 2^63-1 bytes")
        return found


@dataclass
class HostTrace:
    """A loaded host trace: nodes by id, in id (= recording) order."""

    path: str
    schema: str
    nodes: dict[int, HostNode]
    #: GPU kernels of a linked trace, by the id of the host node that launched them
    kernels: dict[int, list[Kernel]] = field(default_factory=dict)
    #: the top-level fields besides ``nodes`` (schema, pid, time, ...), kept for a linked trace
    meta: dict[str, Any] = field(default_factory=dict)

    def where(self, node: HostNode) -> str:
        """``<file>: node '<id> (<name>)'``, the start of every error about a node."""
        return f"{self.path}: node '{node.id} ({node.name})'"

    def error(self, node: HostNode, problem: str) -> InputError:
        return InputError(f"{self.where(node)}: {problem}")

    def roots(self) -> list[HostNode]:
        """The thread nodes: each top-level operator of a thread is their child."""
        return [n for n in self.nodes.values() if n.name in ROOT_NAMES]

    def top_level(self) -> list[HostNode]:
        """Operators a thread called directly, in recording order (their callees run inside them)."""
        roots = {n.id for n in self.roots()}
        return [n for n in self.nodes.values() if n.parent in roots]

    def subtree(self, node: HostNode) -> list[HostNode]:
        """``node`` and everything it called, in recording order."""
        out, stack = [], [node.id]
        while stack:
            nid = stack.pop()
            out.append(self.nodes[nid])
            stack.extend(self.nodes[nid].children)
        return sorted(out, key=lambda n: n.id)


def _check_fields(where: str, raw: dict[str, Any]) -> None:
    """What conversion reads of a node, of the shape ExecutionTraceObserver writes it: an id a
    Chakra node takes (64-bit), ``inputs``/``outputs`` objects of lists, durations in us that
    fit the simulated time (a string, NaN or a list stopped conversion as an internal error)."""
    if not 0 <= raw["id"] < 2**63:
        raise InputError(f"{where}: id {raw['id']} is not one of 0 .. 2^63-1 (a Chakra node id)")
    for side in ("inputs", "outputs"):
        block = raw.get(side)
        if block is not None and not (isinstance(block, dict) and all(
                isinstance(block.get(key, []), list) for key in ("values", "shapes", "types"))):
            raise InputError(f"{where}: '{side}' must be an object whose values, shapes and types are lists, as "
                             f"ExecutionTraceObserver writes them (got {json.dumps(block)[:80]})")
    for key in ("exclusive_dur", "dur"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not 0 <= value <= HORIZON_MICROS):
            raise InputError(f"{where}: '{key}' must be a number of us from 0 to {HORIZON_MICROS} (the simulated "
                             f"time's horizon; got {json.dumps(value)[:80]})")


def _check_no_caller_cycle(path: str, nodes: dict[int, HostNode]) -> None:
    """Every node's chain of callers (``ctrl_deps``) ends at a node outside the trace's
    operators (a thread's root); a cycle would make the call tree endless."""
    state: dict[int, int] = {}  # 1: on the chain being walked, 2: known to end
    for start in nodes:
        chain = []
        nid = start
        while nid in nodes and nid not in state:
            state[nid] = 1
            chain.append(nid)
            parent = nodes[nid].parent
            if parent == nid:
                break
            nid = parent
        if nid in nodes and state.get(nid) == 1 and nodes[nid].parent != nid:
            cycle = chain[chain.index(nid):]
            raise InputError(f"{path}: node '{nid} ({nodes[nid].name})': its ctrl_deps (caller) chain "
                             f"comes back to it ({' -> '.join(map(str, [*cycle[:6], nid]))}); expected a call "
                             f"tree")
        for n in chain:
            state[n] = 2


def _collect_tensors(value: Any, found: list[Tensor]) -> None:
    if (isinstance(value, list) and len(value) >= 5 and all(isinstance(v, int) for v in value[:5])
            and not isinstance(value[0], bool)):
        found.append(Tensor(value[0], value[1], value[3], value[4]))
    elif isinstance(value, list):
        for item in value:
            _collect_tensors(item, found)


def load_host_trace(path: str) -> HostTrace:
    """Read and check a host trace: JSON, a known schema, nodes with ids, names and callers."""
    text = files.read_text(path, "PyTorch host trace", files.TRACE_LIMIT_BYTES)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise InputError(f"{path}: is not JSON ({exc}); expected a PyTorch execution trace "
                         f"(ExecutionTraceObserver output)") from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list) or "schema" not in data:
        raise InputError(f"{path}: is not a PyTorch execution trace: expected a JSON object with "
                         f"'schema' and 'nodes' (ExecutionTraceObserver output)")
    schema = str(data["schema"])
    if not SCHEMA.match(schema):
        raise InputError(f"{path}: field 'schema' is {schema!r}; expected a Chakra host trace schema such as "
                         f"'1.0.3-chakra.0.0.4' (PyTorch 2.1 or later)")
    nodes: dict[int, HostNode] = {}
    kernels: dict[int, list[Kernel]] = {}
    for index, raw in enumerate(data["nodes"]):
        nid = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(nid, int) or isinstance(nid, bool) or not isinstance(raw.get("name"), str):
            raise InputError(f"{path}: nodes[{index}]: expected an object with an integer 'id' and a 'name'")
        if nid in nodes:
            raise InputError(f"{path}: node '{nid} ({raw['name']})': id {nid} is used twice")
        _check_fields(f"{path}: node '{nid} ({raw['name']})'", raw)
        attrs = {a.get("name"): a.get("value") for a in raw.get("attrs") or [] if isinstance(a, dict)}
        parent = raw.get("ctrl_deps", raw.get("parent", 0))
        if raw.get("cat") is not None:  # a GPU kernel a trace linker added
            name = raw["name"]
            kernels.setdefault(parent, []).append(Kernel(
                name, float(raw.get("exclusive_dur", raw.get("dur", 0)) or 0), "nccl" in name.lower(),
                raw.get("in_msg_nelems"), raw.get("msg_dtype")))
            continue
        nodes[nid] = HostNode(nid, raw["name"], parent if isinstance(parent, int) else 0, raw, attrs, source=path)
    for node in sorted(nodes.values(), key=lambda n: n.id):
        if node.parent in nodes and node.parent != node.id:
            nodes[node.parent].children.append(node.id)
    _check_no_caller_cycle(path, nodes)
    ordered = {nid: nodes[nid] for nid in sorted(nodes)}
    meta = {k: v for k, v in data.items() if k != "nodes"}
    trace = HostTrace(path, schema, ordered, kernels, meta)
    if not trace.roots():
        raise InputError(f"{path}: has no thread node '{ROOT_NAMES[0]}'; expected a PyTorch execution trace")
    return trace


def process_groups(trace: HostTrace | dict[str, Any]) -> list[dict[str, Any]]:
    """The process groups the ``## process_group:init ##`` node lists (empty if none)."""
    if isinstance(trace, dict):  # a raw trace, as older callers pass it
        raws = [n for n in trace.get("nodes", []) if isinstance(n, dict)]
        where = "host trace"
    else:
        raws = [n.raw for n in trace.nodes.values()]
        where = trace.path
    for raw in raws:
        if PG_INIT in str(raw.get("name", "")):
            values = (raw.get("inputs") or {}).get("values") or []
            if not values:
                return []
            try:
                groups = json.loads(values[0]) if isinstance(values[0], str) else values[0]
            except ValueError:
                raise InputError(f"{where}: node '{raw.get('id')} ({raw.get('name')})': does not hold the "
                                 f"process groups as JSON") from None
            if not isinstance(groups, list):
                raise InputError(f"{where}: node '{raw.get('id')} ({raw.get('name')})': does not hold the "
                                 f"process groups as a JSON list")
            return [_checked_group(where, raw, g) for g in groups if isinstance(g, dict)]
    return []


def _checked_group(where: str, raw: dict[str, Any], group: dict[str, Any]) -> dict[str, Any]:
    """A process group whose ``ranks`` are rank numbers (``int('x')`` was an internal error)."""
    ranks = group.get("ranks")
    if ranks is not None and not (isinstance(ranks, list) and all(
            isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in ranks)):
        raise InputError(f"{where}: node '{raw.get('id')} ({raw.get('name')})': process group "
                         f"{str(group.get('pg_name', ''))!r} lists ranks {json.dumps(ranks)}; expected a list of "
                         f"rank numbers >= 0")
    return group


def group_ids(groups: list[dict[str, Any]]) -> tuple[dict[str, int], dict[int, list[int]]]:
    """(pg_name -> group id, group id -> ranks) for our comm-group JSON.

    A group without ranks (PyTorch writes ``ranks: []`` for the default, world group) maps to
    0, which means all NPUs. Others keep their name when it is a positive integer not taken yet
    and get the next free id otherwise, in the order the trace lists them.
    """
    names: dict[str, int] = {}
    members: dict[int, list[int]] = {}
    pending = []
    for g in groups:
        name, ranks = str(g.get("pg_name", "")), g.get("ranks") or []
        if not ranks:
            names[name] = 0
        elif re.fullmatch(r"[1-9][0-9]*", name) and int(name) not in members:
            names[name] = int(name)
            members[int(name)] = [int(r) for r in ranks]
        else:
            pending.append((name, ranks))
    next_id = 1
    for name, ranks in pending:
        if name in names:
            continue
        while next_id in members:
            next_id += 1
        names[name] = next_id
        members[next_id] = [int(r) for r in ranks]
    return names, members


def backend_names(groups: list[dict[str, Any]]) -> dict[int, str]:
    """backend_id -> pg_name: older traces (PyTorch 2.2) name a collective's group only by the
    backend's address, which ``process_group:init`` lists next to the name."""
    return {int(g["backend_id"]): str(g.get("pg_name", "")) for g in groups
            if isinstance(g.get("backend_id"), int)}
