"""The cluster presets: YAML files of a GPU's figures and a node's (``clusters/NAME.yaml``, or a
path to a copy the user edited), found by name or path and held to their two blocks; a name
that is none is answered with where it was looked for, or the presets it most likely means."""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from simpy_astra.config.field_values import show_value
from simpy_astra.config.path_words import shell_words
from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.errors import InputError, non_ascii
from simpy_astra.infra import files

PRESET_DIR = os.path.join(os.path.dirname(__file__), "clusters")


def presets() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(PRESET_DIR) if f.endswith(".yaml"))


def preset_path(name: Any, where: str, base_dir: str) -> str:
    if name is None:  # left out (or null)
        raise InputError(f"{where}.preset: is missing; name the machine, one of {', '.join(presets())}, or a "
                         f"preset file of your own (preset: ./my-cluster.yaml)")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.preset: must name a preset, one of {', '.join(presets())}, or a YAML "
                         f"file (got {name!r})")
    path = os.path.join(PRESET_DIR, f"{name}.yaml")
    if not os.path.exists(path):
        problem = shell_words(name, base_dir) if name.strip() not in presets() else None
        if problem:  # ('dgx-h100 ' is told the preset it nearly names, below)
            raise InputError(f"{where}.preset: {name!r}: {problem}")
        path = os.path.normpath(name if os.path.isabs(name) else os.path.join(base_dir, name))
        if name.endswith((".yaml", ".yml")) and not os.path.isfile(path):
            _unreadable_preset(name, path, where, base_dir)
        if os.path.lexists(path) and not name.endswith((".yaml", ".yml")):  # my.YAML, ./my-cluster, a folder
            if os.path.isfile(path):
                return path  # a file named as a path is the user's copy, whatever its suffix
            _unreadable_preset(name, path, where, base_dir)
        if not (name.endswith((".yaml", ".yml")) and os.path.isfile(path)):
            # a machine none of the presets is (dgx-h200): its own preset file is the fix
            hint = _nearest_presets(name) or ("" if non_ascii(name) else "; for another machine, give its own preset "
                                              "file (preset: ./my-cluster.yaml, a shipped preset's fields with its "
                                              "figures)")
            raise InputError(f"{where}.preset: {name!r}{non_ascii(name)} is not a preset ({', '.join(presets())}) "
                             f"nor a YAML file{hint}")
    return path


def _nearest_presets(name: str) -> str:
    """'; did you mean ...?' naming every preset whose name holds ``name`` in any case, its
    dashes written as ``_``, spaces or not at all (``dgx-a100``: both A100s; ``H100``,
    ``dgxh100``), or that ``name`` is with its GPU's memory appended (``dgx-h100-80gb``, as the
    A100s' names have it); else nothing: the closest spelling would send ``dgx-h200`` to the
    H100, another GPU."""
    folded = _folded(name)
    near = [p for p in presets() if len(folded) >= 3 and folded in _folded(p)] or [
        p for p in presets() if folded == f"{_folded(p)}{_memory_gib(p)}gb"]
    return f"; did you mean {' or '.join(near)}?" if near else ""


def _folded(name: str) -> str:
    """``name`` in lower case without the dashes, underscores and spaces between its words."""
    return re.sub(r"[-_\s]", "", name.lower())


def _memory_gib(preset: str) -> object:
    """The memory of a preset's GPU (``gpu.hbm_gib``), as its file gives it."""
    with open(os.path.join(PRESET_DIR, f"{preset}.yaml"), encoding="utf-8") as f:
        return (yaml.safe_load(f).get("gpu") or {}).get("hbm_gib")


def _unreadable_preset(name: str, path: str, where: str, base_dir: str) -> None:
    """A preset file named but not there (or not a file): where it was looked for, or what it
    is, rather than 'is not a preset nor a YAML file' of a name that is plainly a YAML file's."""
    if not os.path.lexists(path):
        stem = os.path.basename(name).rsplit(".", 1)[0]
        if stem in presets() and os.path.dirname(name) in ("", "."):  # a preset's name with its file's suffix
            raise InputError(f"{where}.preset: {name!r} is no file here; the preset is named {stem} (without "
                             f".yaml; a file name is a copy of your own)")
        whence = "" if os.path.isabs(name) else f" (a relative path resolves from {files.show(os.path.abspath(base_dir))})"
        raise InputError(f"{where}.preset: {name!r} is {files.show(os.path.abspath(path))}, which does not "
                         f"exist{whence}")
    try:
        files.check_input(path, "cluster preset YAML")
    except InputError as exc:
        raise InputError(f"{where}.preset: {exc.message}") from None


def check_preset_blocks(doc: Any, path: str) -> None:
    """Refuse a preset file that is not the two mappings ``gpu`` and ``node``, naming the block
    misspelt (``nodes``), missing or not a mapping: our own format, so a key no reader uses is a typo."""
    if not isinstance(doc, dict):
        raise InputError(f"{path}: must be a mapping with blocks 'gpu' and 'node' (got {show_value(doc)})")
    extra = sorted(str(k) for k in set(doc) - {"gpu", "node"})
    if extra:
        near = nearest_key(extra[0], ["gpu", "node"])
        raise InputError(f"{path}: unknown key {extra[0]!r}{non_ascii(extra[0])}" + (
            f"; did you mean {near!r}?" if near else " (a preset has blocks gpu and node only)"))
    for block, what, first in (("gpu", "GPU", "name, sms"), ("node", "node", "gpus, nvlink_gib_s")):
        if block not in doc:
            raise InputError(f"{path}: missing block '{block}' (a mapping of the {what}'s figures: {first}, ...)")
        if not isinstance(doc[block], dict):
            raise InputError(f"{path}: {block}: must be a mapping of the {what}'s figures ({first}, ...); got "
                             f"{show_value(doc[block])}")
