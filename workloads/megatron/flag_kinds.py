"""What the Megatron front end does with each flag: reads it (modelled, or accepted for its small
effect), takes it without a word (it cannot change a step's time), or refuses it by name (a
timing argument not modelled yet); a flag none of these is unknown."""

from __future__ import annotations

from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.workloads.megatron import unmodelled_flags as today
from simpy_astra.workloads.megatron.command_line import SHORT_NAMES
from simpy_astra.workloads.megatron.megatron_flags import ONE_VALUE, SEVERAL_VALUES, SWITCHES
from simpy_astra.workloads.megatron.modelled_arguments import modelled_actions
from simpy_astra.workloads.megatron.unmodelled_flags import NO_TIMING_EFFECT, SMALL_EFFECT

#: every argument Megatron-LM's pretrain_gpt.py has had
MEGATRON_FLAGS = SWITCHES | ONE_VALUE | SEVERAL_VALUES

#: timing arguments this simulator knows exist and does not model yet (refused by name)
NOT_MODELLED = {**today.NOT_MODELLED,
    "--multi-latent-attention": "multi-latent attention",
    "--moe-expert-capacity-factor": "dropped tokens (an expert capacity)",
    "--encoder-num-layers": "encoder-decoder models",
    "--decoder-num-layers": "encoder-decoder models",
    "--pipeline-model-parallel-split-rank": "encoder-decoder pipelines",
    "--cpu-offloading": "activation offloading to the host",
    "--sequence-parallel-size": "DeepSpeed-Ulysses sequence parallelism",
    "--yaml-cfg": "arguments read from a YAML file; give them on the command line",
    "--use-checkpoint-args": "the model's arguments read from the checkpoint --load names; give them on the "
                             "command line",
    "--deterministic-mode": "deterministic kernels (Megatron: 'usually means slower execution': deterministic "
                            "attention backward, NCCL_ALGO pinned)",
}


def ignorable(flag: str) -> bool:
    """``flag`` is one of :data:`NO_TIMING_EFFECT`, or a Megatron-LM argument
    (:mod:`~simpy_astra.workloads.megatron.megatron_flags`) that extends one by ``-...`` (an
    entry ending in ``-`` is a prefix only): a word under such a prefix that no Megatron-LM has
    (``--data-parallel-size``) is refused as Megatron's argparse refuses it, not read as a path."""
    if flag in NO_TIMING_EFFECT and not flag.endswith("-"):
        return True
    return flag in MEGATRON_FLAGS and any(flag.startswith(name if name.endswith("-") else name + "-")
                                          for name in NO_TIMING_EFFECT)


def accepted(flag: str) -> bool:
    """``flag`` is read by the front end: modelled, accepted for its small effect, or one that
    cannot change a step's time (what ``parse`` takes without an error)."""
    return flag in modelled_actions() or flag in SMALL_EFFECT or ignorable(flag)


def cannot_change_time(flag: str) -> bool:
    """``flag`` is one of :data:`NO_TIMING_EFFECT` (a path, the learning rate, a seed...): read
    and ignored, whatever its value."""
    return flag not in modelled_actions() and ignorable(flag)


def known(flag: str) -> bool:
    """``flag`` is one the front end knows: :func:`accepted`, or refused by name as not
    modelled."""
    return accepted(flag) or flag in NOT_MODELLED


def nearest_flag(flag: str) -> str | None:
    """The flag the simulator reads (without its dashes) that ``flag`` abbreviates (``--tp``)
    or misspells, None when none is near; ``flag``'s own name when the simulator reads it."""
    if accepted(flag) and flag not in NOT_MODELLED:
        return flag[2:]
    full = next((name for name, short in SHORT_NAMES.items() if short == flag[2:].replace("-", "_")), None)
    return full or nearest_key(flag[2:], [s[2:] for s in modelled_actions()])
