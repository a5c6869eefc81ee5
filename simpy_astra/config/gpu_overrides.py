"""A scenario's ``cluster.gpu``: figures laid over the preset's GPU. What is no such thing is
refused with the way to another GPU: a GPU's name given for the mapping, or a new name over
the preset's figures (of another generation, or another preset's GPU whose figures differ),
which would run the preset's GPU under it."""

from __future__ import annotations

import functools
import os
from typing import Any

import yaml

from simpy_astra.config.cluster_presets import PRESET_DIR, presets
from simpy_astra.config.gpu_names import gpu_generation
from simpy_astra.errors import InputError


@functools.cache
def _preset_gpus() -> tuple[tuple[str, dict[str, Any]], ...]:
    """Each preset's name and its GPU's figures under the names with units, read once (the
    package's own files: a scenario naming another GPU read all of them at each load, 4 ms)."""
    from simpy_astra.config.cluster_fields import with_units

    out = []
    for preset in presets():
        with open(os.path.join(PRESET_DIR, f"{preset}.yaml"), encoding="utf-8") as f:
            gpu = (yaml.safe_load(f) or {}).get("gpu") or {}
        out.append((preset, with_units(gpu, preset)[0] if isinstance(gpu, dict) else {}))
    return tuple(out)


def _presets_of(generation: str) -> list[str]:
    """The presets whose GPU is of ``generation``."""
    return [preset for preset, gpu in _preset_gpus() if gpu_generation(str(gpu.get("name", ""))) == generation]


def _preset_of_gpu(name: str) -> tuple[str, dict[str, Any]] | None:
    """The preset whose GPU is named ``name``, with its figures; None where no preset's is."""
    return next(((preset, gpu) for preset, gpu in _preset_gpus() if gpu.get("name") == name), None)


def _another_gpu(name: str) -> str:
    """How to run on the GPU ``name``: a preset of its generation, else its own preset copy."""
    near = _presets_of(gpu_generation(name)) if gpu_generation(name) else []
    return (f"preset: {' or '.join(near)}" if near else
            "a copy of a preset with that GPU's figures (preset: ./my-gpu.yaml)")


def check_gpu_overrides(overrides: Any, preset_gpu: dict[str, Any], where: str, path: str) -> None:
    """Refuse a ``cluster.gpu`` that is not figures over the preset's GPU (``where``: the
    scenario's cluster, ``path``: the preset file)."""
    if isinstance(overrides, str) and overrides.strip():
        raise InputError(f"{where}.gpu: {overrides!r} is a GPU's name, and gpu: lays figures over the preset's "
                         f"GPU as a mapping (gpu: {{tensor_tflops: 989}}); for another GPU use "
                         f"{_another_gpu(overrides)}")
    if not isinstance(overrides, dict):
        raise InputError(f"{where}.gpu: must be a mapping of GPU figures to override, e.g. gpu: "
                         f"{{tensor_tflops: 989}} (got {overrides!r})")


def check_gpu_generation(overrides: dict[str, Any], preset_gpu: dict[str, Any], where: str, path: str) -> None:
    """Refuse a name of another generation, or another preset's GPU's name, over figures left the
    preset's that differ from that GPU's (both mappings with their units read, so ``hbm_gbps``
    given is ``hbm_gb_s`` kept)."""
    name, old = overrides.get("name"), str(preset_gpu.get("name", ""))
    if not isinstance(name, str) or not name.isprintable():
        return  # a name not one line of text is refused as such (cluster_fields.check_gpu_name)
    # a figure left out stays the preset's GPU's: under another generation's name it would
    # price that GPU with this one's rate, memory or bandwidth, so all of them are asked for
    kept = sorted(set(preset_gpu) - set(overrides) - {"name"})
    # (a GPU of another known generation is told so below, whichever figures are kept; a preset's
    # GPU over one whose generation is not known, a preset copy's, is told here)
    elsewhere = gpu_generation(name) and gpu_generation(old) and gpu_generation(name) != gpu_generation(old)
    other = _preset_of_gpu(name) if kept and name != old and not elsewhere else None
    differ = [key for key in kept if other is not None and other[1].get(key, preset_gpu[key]) != preset_gpu[key]]
    if differ:  # another preset's GPU (the A100's 80 GB over the 40 GB one's memory)
        raise InputError(f"{where}.gpu.name: {name} is preset {other[0]}'s GPU, and {', '.join(differ)} "
                         f"{'is' if len(differ) == 1 else 'are'} still {path}'s {old}'s: the run would price "
                         f"this GPU with that one's; use preset: {other[0]}, or give "
                         f"{'it' if len(differ) == 1 else 'them'} beside its name")
    if kept and elsewhere:
        what = "every figure is" if len(kept) == len(set(preset_gpu) - {"name"}) else f"{', '.join(kept)} are"
        raise InputError(f"{where}.gpu.name: {name} is a {gpu_generation(name)} GPU and {what} still "
                         f"{path}'s {old} ({gpu_generation(old)}): only NCCL's constants and the attention "
                         f"kernels would change; use {_another_gpu(name)}, or give all the GPU's figures beside "
                         f"its name")
