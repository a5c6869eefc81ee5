"""Which collective algorithm a system JSON runs where: the ``*-implementation`` lists (one
algorithm a dimension), ``*-group-implementation`` (one for a subset group's collective),
``*-implementation-custom`` and ``per-node-custom-implementation`` (custom collectives' ET
files). Names resolve through the collectives registry, so a plug-in's algorithms are
accepted too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from simpy_astra.collectives import known_names as known_collective_names
from simpy_astra.collectives import resolve as resolve_collective
from simpy_astra.config.field_values import INT32_MAX, json_string, show_value
from simpy_astra.config.file_text import PathLike
from simpy_astra.config.yaml_reader import load_yaml_mapping
from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.plugins import NOT_LOADED_HINT, PluginError

#: collective kind -> stem of its system-JSON keys (``<stem>-implementation[-custom]``)
COLLECTIVE_KEY_STEMS = {
    "all_reduce": "all-reduce",
    "reduce_scatter": "reduce-scatter",
    "all_gather": "all-gather",
    "all_to_all": "all-to-all",
}


def parse_implementation(name: str) -> tuple[str, int | None]:
    """(name without its window, window) of an accepted algorithm name: ``direct4`` ->
    ("direct", 4). Names are resolved by :func:`collectives.resolve`, so algorithms
    registered in ``collectives/`` are accepted too. Raises ValueError otherwise."""
    try:
        choice = resolve_collective(name) if isinstance(name, str) else None
    except PluginError as exc:
        raise ValueError(str(exc)) from None
    if choice is None:
        names = known_collective_names()
        near = next((k for k in names if isinstance(name, str) and k.lower() == name.lower()), None)
        loaded = (f"; did you mean '{near}'?" if near else
                  f"; {NOT_LOADED_HINT}" if isinstance(name, str) and name.isidentifier() else "")
        raise ValueError(f"unknown collective implementation {show_value(name)}; valid: "
                         f"{', '.join(names)} (K = window of 1-5 digits > 0, e.g. direct4)"
                         f"{loaded}")
    return (name if choice.window is None else name.rstrip("0123456789")), choice.window


def _implementation_list(src: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise InputError.at(
            src,
            key,
            f"must be a non-empty list with one algorithm per logical dimension, e.g. "
            f'["ring"] (got {show_value(value)})',
        )
    for i, name in enumerate(value):
        try:
            parse_implementation(name)
        except ValueError as exc:
            raise InputError.at(src, f"{key}[{i}]", f"is invalid: {exc}") from None
    return tuple(value)


def group_implementations(src: str, j: dict) -> dict[str, str]:
    """``<stem>-group-implementation``: one algorithm for a subset group's collective (cluster
    presets run NCCL's direct all-to-all there, where the reference's rule would run a ring)."""
    chosen: dict[str, str] = {}
    for kind, stem in COLLECTIVE_KEY_STEMS.items():
        key = f"{stem}-group-implementation"
        if key in j:
            value = j[key]
            try:
                if not isinstance(value, str):
                    raise ValueError(f"must be one algorithm's name (got {show_value(value)})")
                parse_implementation(value)
            except ValueError as exc:
                raise InputError.at(src, key, f"is invalid: {exc}") from None
            chosen[kind] = value
    return chosen


def _custom_path(src: str, key: str, value: Any) -> str:
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], str) or not value[0]:
        raise InputError.at(
            src,
            key,
            f"must be a list with exactly one custom-collective ET path prefix, e.g. "
            f'["dir/custom_allreduce"] (got {show_value(value)}); one ET covers all dimensions',
        )
    return value[0]


def load_per_node_custom_yaml(path: PathLike) -> dict[int, str]:
    """Read a per-node custom-collective YAML: ``{workload node id: ET path prefix}``."""
    src = os.fspath(path)
    data = load_yaml_mapping(src, "per-node custom-collective YAML", "7: path/to/custom_allreduce")
    result: dict[int, str] = {}
    for key, prefix in data.items():
        node_id: int | None = None
        if isinstance(key, int) and not isinstance(key, bool):
            node_id = key
        elif isinstance(key, str) and re.fullmatch(r"[0-9]+", key):
            node_id = int(key)
        if node_id is None or not 0 <= node_id <= INT32_MAX:
            raise InputError.at(src, show_value(key), "is not a workload node id (an integer >= 0)", kind="key")
        if not isinstance(prefix, str) or not prefix:
            raise InputError.at(
                src,
                node_id,
                f"must map to a custom-collective ET path prefix string (got {show_value(prefix)})",
                kind="node",
            )
        result[node_id] = prefix
    return result


def collective_keys(src: str, j: dict) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """The ``*-implementation`` lists and ``*-implementation-custom`` files, by collective."""
    implementations: dict[str, tuple[str, ...]] = {}
    custom: dict[str, str] = {}
    for kind, stem in COLLECTIVE_KEY_STEMS.items():
        key = f"{stem}-implementation"
        if key in j:
            implementations[kind] = _implementation_list(src, key, j[key])
        if key + "-custom" in j:
            custom[kind] = _custom_path(src, key + "-custom", j[key + "-custom"])
    return implementations, custom


def per_node_custom(src: str, j: dict) -> tuple[str, Any]:
    """``per-node-custom-implementation``: its YAML file's path and what it maps."""
    key = "per-node-custom-implementation"
    yaml_path = json_string(src, key, j[key], "the path of a YAML file {node_id: path_prefix}")
    if not Path(yaml_path).is_file():
        raise InputError.at(
            src,
            key,
            f"names {yaml_path}, which does not exist{files.where_relative(yaml_path)}",
        )
    return yaml_path, load_per_node_custom_yaml(yaml_path)
