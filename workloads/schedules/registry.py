"""Pipeline schedules by name: what the Megatron and transformer generators look up. A new
schedule is a file with one function returning :class:`~.task.Task` lists, and a line here;
or, without editing the package, a plug-in's :func:`register` call or a
``package.module:function`` name (``workload: {generate: megatron, schedule: ...}``)."""

from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
from collections import Counter
from pathlib import Path

from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.infra.registry_names import origin, same_definition, spellable
from simpy_astra.plugins import (
    PluginError,
    import_object,
    shown,
    unfit_call,
    user_code_problem,
    users_int,
)
from simpy_astra.workloads.schedules.interleaved import interleaved
from simpy_astra.workloads.schedules.one_f_one_b import one_f_one_b
from simpy_astra.workloads.schedules.task import PLACEMENTS, Kind, Schedule, Task, placement, takes_costs
from simpy_astra.workloads.schedules.zero_bubble import zb_h1
from simpy_astra.workloads.schedules.zero_bubble_v import zb_v

SCHEDULES: dict[str, Schedule] = {
    "1f1b": one_f_one_b,
    "interleaved-1f1b": interleaved,
    "zb-h1": zb_h1,
    "zb-v": zb_v,
}
_OURS = frozenset(SCHEDULES.values())


def register(name: str, schedule: Schedule) -> Schedule:
    """Add a schedule under ``name`` (a plug-in's or a test's); names are unique. A plug-in's
    schedule is checked on every call: what it raises or returns out of contract is one line
    naming it (:func:`_checked`)."""
    spellable(name, "pipeline schedule")
    if not callable(schedule):
        raise TypeError(f"pipeline schedule {name!r}: {shown(schedule, 120)} is not a function "
                        f"fn(stage, pp, micro_batches, chunks) returning Task lists")
    costs = takes_costs(schedule)  # then the generator passes costs=PassCosts(...) too
    unfit = unfit_call(schedule, 0, 1, 1, 1, **({"costs": None} if costs else {}))
    if unfit:
        raise TypeError(f"pipeline schedule {name!r}: {unfit} cannot be called as fn(stage, pp, micro_batches, "
                        f"chunks{', costs=...' if costs else ''})")
    if placement(schedule) not in PLACEMENTS:
        raise TypeError(f"pipeline schedule {name!r}: chunk_placement {placement(schedule)!r} is none of "
                        f"{', '.join(map(repr, PLACEMENTS))}")
    if not isinstance(getattr(schedule, "overlap_p2p_comm", False), bool):
        raise TypeError(f"pipeline schedule {name!r}: overlap_p2p_comm must be True or False "
                        f"(got {schedule.overlap_p2p_comm!r})")
    taken = SCHEDULES.get(name)  # the same module:function imported again may register again
    if taken is not None and not same_definition(inspect.unwrap(taken), inspect.unwrap(schedule)):
        raise ValueError(f"pipeline schedule {name!r} is already registered (by "
                         f"{origin(inspect.unwrap(taken))}); register {origin(schedule)} under another name")
    SCHEDULES[name] = schedule if schedule in _OURS else _checked(name, inspect.unwrap(schedule))
    return SCHEDULES[name]


def lookup(name: str) -> Schedule:
    """The schedule a job names: a registered name, or ``package.module:function`` (registered
    under that name). ValueError (or :class:`PluginError`) when nothing has that name."""
    if name not in SCHEDULES and ":" in name:
        register(name, import_object(name))
    return schedule(name)


def is_built_in(name: str) -> bool:
    """``name`` gives one of the schedules above. Asked by identity, not by
    :func:`simpy_astra.plugins.is_ours`: a plug-in's schedule is registered wrapped in
    :func:`_checked`, whose module is ours."""
    return SCHEDULES.get(name) in _OURS


def source_digest(name: str) -> str:
    """A hash of the source file of a plug-in's schedule (it keys the trace cache, so an edited
    schedule is run again); empty for ours, whose code the cache's code digest covers."""
    if is_built_in(name):
        return ""
    try:
        path = inspect.getsourcefile(inspect.unwrap(SCHEDULES[name]))
    except TypeError:
        path = None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else ""


def default_schedule(chunks: int) -> str:
    """Megatron-LM's choice: interleaved 1F1B with virtual pipeline stages, else 1F1B."""
    return "1f1b" if chunks == 1 else "interleaved-1f1b"


def schedule(name: str) -> Schedule:
    if name not in SCHEDULES:
        near = nearest_key(name, SCHEDULES)  # as every other field's misspelling is answered
        hint = f"did you mean '{near}'?" if near else f"known: {', '.join(sorted(SCHEDULES))}"
        raise ValueError(f"unknown pipeline schedule {name!r}; {hint} (or package.module:function)")
    return SCHEDULES[name]


def _checked(name: str, fn: Schedule) -> Schedule:
    """``fn`` with its answer held to the contract: every micro-batch through every chunk
    forwarded once and then backwarded once (whole, or as input then weight gradient), nothing
    else; else a stage would wait for ever, or a step would run less work than the job has."""
    @functools.wraps(fn)
    def checked(stage: int, pp: int, micro_batches: int, chunks: int, **costs: object) -> list[Task]:
        what = f"pipeline schedule '{name}'"
        try:
            order = fn(stage, pp, micro_batches, chunks, **costs)
            endless = inspect.isgenerator(order)  # a generator function's tasks (yield Task(...)), in their order
            if endless:  # up to one past the most a stage runs: one that never returns stops there, not hangs
                order = list(itertools.islice(order, _most_tasks(micro_batches, chunks) + 1))
                endless = len(order) > _most_tasks(micro_batches, chunks)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - theirs, reported as theirs
            raise PluginError(user_code_problem(what, exc), exc) from None
        if endless:
            raise PluginError(f"{what}: for stage {stage} of {pp} ({micro_batches} micro-batches, {chunks} chunk(s)) "
                              f"it gave more than {_most_tasks(micro_batches, chunks):,} tasks, the most a stage runs "
                              f"(each micro-batch of each chunk: FORWARD, then BACKWARD or BACKWARD_INPUT and "
                              f"BACKWARD_WEIGHT); a generator that never returns? end its loop after the last task")
        if isinstance(order, list | tuple):  # numpy's ids (np.arange) as the ints they are
            order = [(t[0], users_int(t[1]), users_int(t[2])) if isinstance(t, tuple) and len(t) == 3 else t
                     for t in order]
        problem = _out_of_contract(order, micro_batches, chunks)
        if problem:
            raise PluginError(f"{what}: for stage {stage} of {pp} ({micro_batches} micro-batches, {chunks} "
                              f"chunk(s)) it returned {problem}; it must return Task(kind, micro_batch, chunk) "
                              f"with every micro-batch of every chunk forwarded once, then backwarded once "
                              f"(BACKWARD, or BACKWARD_INPUT then BACKWARD_WEIGHT)")
        return [Task(Kind(t[0]), t[1], t[2]) for t in order]

    return checked


def _most_tasks(micro_batches: int, chunks: int) -> int:
    """The most tasks a stage's order holds: three per micro-batch and chunk (a forward, an
    input and a weight gradient); a generator that yields more never ends, or breaks the contract."""
    return 3 * micro_batches * chunks


def _out_of_contract(order: object, micro_batches: int, chunks: int) -> str:
    """What is wrong with ``order`` (empty: nothing)."""
    if not isinstance(order, list | tuple):
        return f"{type(order).__name__}, not a list"
    seen: Counter[tuple[str, int, int]] = Counter()
    for task in order:
        wrong = _not_a_task(task, micro_batches, chunks)
        if wrong:
            return f"{task!r}: {wrong}"
        kind, mb, chunk = Kind(task[0]), task[1], task[2]
        if kind is not Kind.FORWARD and not seen[(Kind.FORWARD.value, mb, chunk)]:
            return f"{kind.name} of micro-batch {mb}, chunk {chunk} before its FORWARD"
        if kind is Kind.BACKWARD_WEIGHT and not seen[(Kind.BACKWARD_INPUT.value, mb, chunk)]:
            return f"BACKWARD_WEIGHT of micro-batch {mb}, chunk {chunk} before its BACKWARD_INPUT"
        seen[(kind.value, mb, chunk)] += 1
    for mb in range(micro_batches):
        for chunk in range(chunks):
            f, b = seen[("F", mb, chunk)], seen[("B", mb, chunk)]
            split = seen[("I", mb, chunk)], seen[("W", mb, chunk)]
            if f != 1 or (b, *split) not in ((1, 0, 0), (0, 1, 1)):
                halves = f" (BACKWARD_INPUT {split[0]}, BACKWARD_WEIGHT {split[1]} of them)" if any(split) else ""
                return (f"micro-batch {mb}, chunk {chunk} forwarded {f} time(s) and backwarded "
                        f"{b + max(split)}{halves}")
    return ""


def _not_a_task(task: object, micro_batches: int, chunks: int) -> str:
    """What makes ``task`` no task of this stage, in words (empty: it is one)."""
    if not (isinstance(task, tuple) and len(task) == 3):
        return "not a Task(kind, micro_batch, chunk)"
    kind, mb, chunk = task
    if kind not in set(Kind):
        return (f"its kind {shown(kind, 60)} is not a Kind: write Kind.FORWARD, Kind.BACKWARD, Kind.BACKWARD_INPUT or "
                f"Kind.BACKWARD_WEIGHT (from simpy_astra.workloads.schedules.task)")
    for field, value, count in (("micro_batch", mb, micro_batches), ("chunk", chunk, chunks)):
        if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < count):
            return f"its {field} {shown(value, 60)} is not a whole number from 0 to {count - 1}"
    return ""
