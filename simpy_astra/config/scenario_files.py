"""A scenario's fields that name an input: a path resolved from the scenario's own folder, or
the input written inline as a mapping; errors name the scenario and the field as written."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from simpy_astra.config import comm_groups_from_mapping
from simpy_astra.config.path_words import shell_words
from simpy_astra.errors import InputError

T = TypeVar("T")


def scenario_path(scenario: str, value: str, field: str) -> str:
    """A path written in a scenario, resolved relative to the scenario's folder. A leading
    ``~`` is not the home folder here (no shell reads a scenario): unless the scenario's folder
    holds a ``~``, it is refused with the full path to write, else the error was a missing
    ``SCENARIO_FOLDER/~/...`` file."""
    folder = os.path.dirname(os.path.abspath(scenario))
    problem = shell_words(value, folder)
    if problem:
        raise InputError.at(scenario, field, f"is {value!r}: {problem}")
    if os.path.isabs(value):
        return value
    home = value.split(os.sep, 1)[0]
    if home.startswith("~") and os.path.expanduser(home) != home and not os.path.lexists(os.path.join(folder, home)):
        raise InputError.at(scenario, field, f"is {value}, but ~ means the home folder only to a shell; a "
                                             f"scenario's relative paths resolve from its own folder: write "
                                             f"{os.path.expanduser(value)}")
    return os.path.join(folder, value)


def read_block(scenario: str, key: str, value: Any, from_path: Callable[[str], T],
               from_mapping: Callable[[Any, str], T]) -> T:
    """One input of a scenario: a file path (read with its own name in errors) or an inline
    mapping (errors name the scenario and the key, e.g. ``scenario.yaml: network``)."""
    if isinstance(value, str) and value:
        return from_path(scenario_path(scenario, value, key))
    if isinstance(value, dict):
        return from_mapping(value, f"{scenario}: {key}")
    raise InputError.at(scenario, key, f"must be a file path or a mapping (got {value!r})")


def comm_groups_field(path: str, value: Any, npus: int) -> str | dict[int, tuple[int, ...]]:
    """``comm_groups`` as written (present: a scenario without it has no groups): a file (read
    with the workload's, :func:`~simpy_astra.config.astra_inputs.run_inputs`) or a mapping."""
    if isinstance(value, dict):
        return inline_groups(value, f"{path}: comm_groups", npus)
    if isinstance(value, str) and value:
        return scenario_path(path, value, "comm_groups")
    raise InputError.at(path, "comm_groups", f"must be a file path or a mapping (got {value!r})")


def inline_groups(value: dict, where: str, npus: int, job: bool = False) -> dict[int, tuple[int, ...]]:
    """Communicator groups written inline in a scenario (or a job, ``job``: in its ranks). An
    empty mapping is refused, as an empty cost or remote_memory is: it ran in silence as if
    the groups were left out, though a group was meant."""
    if not value:
        raise InputError(f"{where}: is empty; list a group, e.g. {{1: [0, 1]}}, or leave it out")
    return comm_groups_from_mapping(value, where, npus, job)
