"""MLCommons' own tools (package ``mlc-chakra``, extra ``.[pytorch]``), used where they work.

mlc-chakra's PyTorch converter writes the ET of a linked host + device trace (GPU kernels and
NCCL collectives); its own linker also needs PARAM's ``et_replay`` (not on PyPI), so linking is
ours (:mod:`.kineto`). Its output runs here once the process groups have integer ids: a
``pg_name`` that is not one already (PyTorch may name groups) is renamed to its id in the
collectives and in the METADATA node, which the simulator reads as ASTRA-sim does.
"""

from __future__ import annotations

import ast
import json
import logging

from simpy_astra.errors import InputError
from simpy_astra.workloads.pytorch.host_trace import PG_INIT

MISSING_EXTRA = "convert pytorch needs MLCommons' Chakra tools: pip install 'simpy-astra[pytorch]' (mlc-chakra)"


def available() -> bool:
    """Whether mlc-chakra's PyTorch converter can be imported."""
    try:
        import chakra.src.converter.pytorch_converter  # noqa: F401
    except ImportError:
        return False
    return True


def require() -> None:
    if not available():
        raise InputError(MISSING_EXTRA)


def convert_json(trace_json: str, output_et: str) -> None:
    """mlc-chakra's PyTorch converter: a host (+ device) JSON trace -> a Chakra protobuf ET."""
    require()
    # deferred: mlc-chakra is an optional extra; only PyTorch conversion needs it
    from chakra.src.converter.pytorch_converter import PyTorchConverter

    quiet = logging.getLogger().level
    logging.getLogger().setLevel(max(quiet, logging.WARNING))  # its debug log is per node
    try:
        PyTorchConverter().convert(trace_json, output_et, False)
    except (ValueError, KeyError) as exc:
        text = " ".join(str(exc).split())
        raise InputError(f"{trace_json}: mlc-chakra cannot convert this trace ({type(exc).__name__}: "
                         f"{text[:300]})") from None
    finally:
        logging.getLogger().setLevel(quiet)


def _renamed_pg_list(values: str, names: dict[str, int]) -> str:
    """A METADATA node's ``inputs.values`` (``['[{"pg_name": ...}, ...]']``, as mlc-chakra writes
    it) with every ``pg_name`` replaced by its group id."""
    try:
        outer = ast.literal_eval(values)
        groups = json.loads(outer[0])
    except (ValueError, SyntaxError, IndexError, TypeError):
        return values  # not a process-group list: leave it
    for g in groups:
        if isinstance(g, dict) and str(g.get("pg_name", "")) in names:
            g["pg_name"] = str(names[str(g["pg_name"])])
    return str([json.dumps(groups)])


def rename_groups(et_in: str, et_out: str, names: dict[str, int]) -> int:
    """Copy an ET, setting each ``pg_name`` (collectives' attributes and the process-group list
    of the METADATA node) to its group id; returns how many nodes changed."""
    # deferred: mlc-chakra is an optional extra; only PyTorch conversion needs it
    from chakra.schema.protobuf.et_def_pb2 import GlobalMetadata
    from chakra.schema.protobuf.et_def_pb2 import Node as ChakraNode

    # deferred: mlc-chakra is an optional extra; only PyTorch conversion needs it
    from chakra.src.third_party.utils.protolib import decodeMessage, encodeMessage

    changed = 0
    with open(et_in, "rb") as src, open(et_out, "wb") as dst:
        meta = GlobalMetadata()
        decodeMessage(src, meta)
        encodeMessage(dst, meta)
        node = ChakraNode()
        while decodeMessage(src, node):
            before = node.SerializeToString()
            for attr in node.attr:
                if attr.name == "pg_name" and attr.string_val in names:
                    attr.string_val = str(names[attr.string_val])
            if PG_INIT in node.name and node.inputs.values:
                node.inputs.values = _renamed_pg_list(node.inputs.values, names)
            changed += node.SerializeToString() != before
            encodeMessage(dst, node)
            node = ChakraNode()
    return changed
