"""Axes over Megatron-LM arguments: ``workload.args.<flag>`` edits one flag of the base ``args``.

Researchers think in flags, not in whole command lines: ``workload.args.tensor-model-parallel-size:
[1, 2, 4, 8]`` replaces ``--tensor-model-parallel-size`` in the base scenario's ``args`` (or adds
it); ``true``/``false`` turn a switch (``--sequence-parallel``) on or off, and ``false`` removes
a flag that takes a value (``workload.args.recompute-method: false`` for selective recomputation,
which takes no method). A flag written under another of its names (``--batch-size`` for
``--micro-batch-size``) is replaced too. In expressions every modelled flag of a point is a name
with ``_`` for ``-`` (``tensor_model_parallel_size``), read from the point's own arguments.
"""

from __future__ import annotations

import argparse
import shlex
from functools import cache
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.sweep.integer_ranges import refuse_a_range_in_floats
from simpy_astra.workloads.megatron import command_line
from simpy_astra.workloads.megatron.argparser import int_flag_fix
from simpy_astra.workloads.megatron.command_line import SHORT_NAMES
from simpy_astra.workloads.megatron.flag_kinds import NOT_MODELLED, accepted, cannot_change_time, nearest_flag
from simpy_astra.workloads.megatron.megatron_flags import SEVERAL_VALUES, SWITCHES
from simpy_astra.workloads.megatron.modelled_arguments import modelled_actions, parser, value_problem

PREFIX = "workload.args."


def is_args_path(dotted: str) -> bool:
    return dotted.startswith(PREFIX)


def flag_of(dotted: str) -> str:
    """``workload.args.micro-batch-size`` -> ``--micro-batch-size``."""
    return "--" + dotted[len(PREFIX):].lstrip("-")


def canonical_path(dotted: str) -> str:
    """``dotted`` with a Megatron flag under its first name (``workload.args.batch-size`` ->
    ``workload.args.micro-batch-size``); any other path as it is."""
    if not is_args_path(dotted):
        return dotted
    action = modelled_actions().get(flag_of(dotted))
    return PREFIX + (action.option_strings[0] if action is not None else flag_of(dotted))[2:]


def short_name(dotted: str) -> str | None:
    """The short name of ``dotted``'s Megatron flag (:data:`SHORT_NAMES`, what a Megatron user
    calls it), else None: a plain axis on one (under any of its names) is called so in
    expressions and in every line that names a point (``tp=4 pp=2 vp=off``), unless its ``as:``
    names it; its flag's own name (``tensor_model_parallel_size``) stays a name."""
    return SHORT_NAMES.get(canonical_path(dotted)[len(PREFIX):]) if is_args_path(dotted) else None


def is_switch(flag: str) -> bool:
    """``flag`` takes no value: a modelled switch, or one of Megatron-LM's that the simulator
    accepts without modelling (``--no-persist-layer-norm``, ``--batch-p2p-communication``)."""
    action = modelled_actions().get(flag)
    return action.nargs == 0 if action is not None else flag in SWITCHES


def takes_several(flag: str) -> bool:
    """``flag`` takes a list of values (``--cp-comm-type``, ``--hierarchical-context-parallel-sizes``):
    an axis value may be a list of them, or a string of them split by spaces."""
    action = modelled_actions().get(flag)
    return action.nargs in ("+", "*") if action is not None else flag in SEVERAL_VALUES


def words_of(flag: str, value: Any) -> list[str] | None:
    """The words a value writes after ``flag``; None when it is not one the flag can take in
    one axis value (a mapping; a list beside a flag of one value)."""
    if isinstance(value, dict):
        return None
    whole = _takes_integers(flag)  # 8.0 stays 8.0 there: Megatron's int() refuses it, as run does
    if takes_several(flag):
        items = value if isinstance(value, list) else str(_text(value, whole)).split()
        return [_text(v, whole) for v in items] if items and not any(isinstance(v, dict | list) for v in items) \
            else None
    return None if isinstance(value, list) else [_text(value, whole)]


def _takes_integers(flag: str) -> bool:
    """``flag``'s values are read by ``int()`` (Megatron-LM's ``type=int``)."""
    action = modelled_actions().get(flag)
    return action is not None and action.type is int


def check_integers(dotted: str, raw: Any, where: str) -> None:
    """An axis's values as written (before ``2`` and ``2.0`` count as one point): none a float
    for a flag of integers."""
    if not is_args_path(dotted):
        return
    flag = flag_of(dotted)
    if _takes_integers(flag):  # a range counts in its numbers' kind
        refuse_a_range_in_floats(raw, flag, where)
    values = raw.get("values") if isinstance(raw, dict) else raw
    for value in values if isinstance(values, list) else [values]:
        _float_for_integers(flag, value, where)


def _float_for_integers(flag: str, value: Any, where: str) -> None:
    """A YAML float given to a flag of integers (``[[8.0, 2]]``): refused, as ``run`` refuses
    ``8.0`` in ``workload.args`` and Megatron's argparse refuses it (``int('8.0')``), rather than
    written as the integer it might have meant; the fix is ``run``'s (:func:`int_flag_fix`)."""
    items = value if isinstance(value, list) else [value]
    found = next((v for v in items if isinstance(v, float)), None)
    if found is None or not _takes_integers(flag):
        return
    fix = int_flag_fix(value) or "; give whole numbers"
    raise InputError(f"{where}: {flag} takes integers, not {found!r}{fix}")


def _known(flag: str) -> bool:
    return accepted(flag)


def check_flag(dotted: str, where: str) -> None:
    """A flag the simulator neither models nor accepts would fail every point alike."""
    flag = flag_of(dotted)
    if flag in NOT_MODELLED:  # a Megatron-LM argument, refused by name: every point would fail on it
        raise InputError(f"{where}: '{dotted}': {flag} is not modelled ({NOT_MODELLED[flag]}); leave it out")
    if not _known(flag):
        near = nearest_flag(flag)
        hint = f"; did you mean '{PREFIX}{near}'?" if near else " (simpy-astra generate megatron --help lists them)"
        raise InputError(f"{where}: '{dotted}': {flag} is not a Megatron-LM argument this simulator reads{hint}")


def check_values(dotted: str, values: tuple[Any, ...], where: str) -> None:
    """Each value must be one the flag can take (a typo would fail its point when run). An axis
    that only changes the value of a flag no step's time depends on (``--lr``,
    ``--seed``) gives points that all run the same step; keeping or removing such a flag
    (``false``) may still change what Megatron accepts, and one value is a fixed setting."""
    flag = flag_of(dotted)
    action = modelled_actions().get(flag)
    gone = [v for v in values if v is None or v is False]
    if gone and action is not None and action.required:  # argparse: "the following arguments are required"
        raise InputError(f"{where}: {str(gone[0]).lower() if gone[0] is False else 'null'} removes {flag}, which "
                         f"Megatron-LM requires (its argparse stops without it); give it a value")
    for value in values:  # a value argparse refuses fails its point alike, whatever the others
        _float_for_integers(flag, value, where)
        words = None if value is None or isinstance(value, bool) else words_of(flag, value)
        problem = next((found for word in words or () if (found := value_problem(flag, word))), None)
        if problem is not None:
            raise InputError(f"{where}: {flag} {' '.join(words or ())}: {problem}; fix the value (simpy-astra "
                             f"generate megatron --help lists the flag's values)")
    if len(values) > 1 and cannot_change_time(flag) and \
            not any(v is None or isinstance(v, bool) for v in values):
        raise InputError(f"{where}: {flag} cannot change a step's time (the simulator reads and ignores it), so "
                         f"every point would run the same; sweep a modelled flag (simpy-astra generate "
                         f"megatron --help lists them) or give this one value")


#: not a flag: Megatron derives it as gpus / (tp x pp x cp); a name in expressions too
DATA_PARALLEL = "data_parallel_size"


def abbreviated() -> dict[str, str]:
    """The short name Megatron users write (``pp``, ``dp``) -> the name an expression knows the
    value by where no axis is called so (``pipeline_model_parallel_size``, ``data_parallel_size``)."""
    return {short: flag.replace("-", "_") for flag, short in command_line.SHORT_NAMES.items()} | {"dp": DATA_PARALLEL}


def names() -> set[str]:
    """The names modelled flags have in expressions (``tensor_model_parallel_size``, ...),
    and ``data_parallel_size``."""
    return {a.dest for a in modelled_actions().values() if a.dest != "help"} | {DATA_PARALLEL}


def _tokens(args: Any, where: str) -> list[str]:
    """The words of ``args`` exactly as ``run`` reads them (:func:`command_line.words`: one
    string, with a pasted launch script's ``torchrun ... pretrain_gpt.py`` prefix, line
    continuations and odd spaces dealt with, or a list of words)."""
    return command_line.words(args, f"{where}: the base scenario's workload.args")


def _text(value: Any, whole: bool = False) -> str:
    """A value as its word; an integral float as an integer (``1.0`` -> ``1``), except for a flag
    of integers (``whole``), whose ``8.0`` stays a float for its check to refuse."""
    if isinstance(value, float) and value.is_integer() and not whole:
        value = int(value)
    return str(value)


def set_flag(args: Any, dotted: str, value: Any, where: str) -> str:
    """``args`` with the flag of ``dotted`` set to ``value``: replaced where it stood (every
    name it has), else appended; ``true`` writes a switch, ``false`` or null removes the flag.
    A pasted launcher's words are kept (they were dropped: a point ran on nodes of another
    count than its ``torchrun --nproc_per_node`` in silence, where the base is refused)."""
    flag = flag_of(dotted)
    action = modelled_actions().get(flag)
    spellings = set(action.option_strings) if action is not None else {flag}
    switch = is_switch(flag)
    if switch and not isinstance(value, bool) and value is not None:
        raise InputError(f"{where}: {flag} is a switch: give true (on) or false (off), not {value!r}")
    if not switch and value is True:
        raise InputError(f"{where}: {flag} takes a value (e.g. {flag} 4); true fits only a switch; false "
                         f"removes it")
    words = None if value is None or isinstance(value, bool) else words_of(flag, value)
    if words is None and value is not None and not isinstance(value, bool):
        several = " or a list of them" if takes_several(flag) else ""
        raise InputError(f"{where}: {flag}: give one value (a number or a word){several}, not {value!r}")
    # a pasted launcher's words stay before Megatron's: its run checks them against the cluster
    launcher, tokens = command_line.launch_line(args, f"{where}: the base scenario's workload.args")
    out: list[str] = []
    at: int | None = None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name = token.split("=", 1)[0]
        if name in spellings:
            at = len(out) if at is None else at
            i += 1
            if "=" not in token and not switch:  # the flag's values, up to the next flag
                while i < len(tokens) and not tokens[i].startswith("--"):
                    i += 1
            continue
        out.append(token)
        i += 1
    if value is not None and value is not False:
        new = [flag] if switch else [flag, *(words or ())]
        at = len(out) if at is None else at
        out[at:at] = new
    return shlex.join([*launcher, *out])


@cache
def _lenient_parser() -> argparse.ArgumentParser:
    """The modelled arguments, none required (a missing flag is the point's error, not the
    names'); built once, as a sweep reads every point's flags."""
    p = parser()
    for action in p.options:
        action.required = False
    return p


def flag_values(args: Any, gpus: Any = None) -> dict[str, Any]:
    """Every modelled flag's value in ``args`` (defaults where absent), by its expression name,
    and the data-parallel size on ``gpus`` GPUs when they divide (and with it the global batch
    Megatron sets when none is given, micro-batch x dp: a sweep over the GPU count without one
    scales it); empty when the arguments cannot be read (the point then fails and says why)."""
    try:
        known, _rest = _lenient_parser().parse_known_args(_tokens(args, "workload"))
    except (Exception, SystemExit):  # noqa: BLE001 - any unreadable args: no names
        return {}
    values = {k: v for k, v in vars(known).items() if k != "help"}
    try:
        model = values["tensor_model_parallel_size"] * values["pipeline_model_parallel_size"] * \
            values["context_parallel_size"]
    except (KeyError, TypeError):
        return values
    if isinstance(gpus, int) and isinstance(model, int) and model > 0 and gpus % model == 0:
        values[DATA_PARALLEL] = gpus // model
    if values.get("global_batch_size") is None:  # Megatron's default: a micro-batch per data-parallel rank
        values.pop("global_batch_size", None)  # unknown where dp is: such a point shows why it cannot run
        if DATA_PARALLEL in values and isinstance(values.get("micro_batch_size"), int):
            values["global_batch_size"] = values["micro_batch_size"] * values[DATA_PARALLEL]
    return values
