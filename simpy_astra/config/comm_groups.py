"""The communicator-group JSON (``{"group id": [NPU ids]}``) and when ASTRA-sim ignores it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from simpy_astra.config.field_values import INT32_MAX, require_mapping, show_value
from simpy_astra.config.file_kinds import refuse_another_kind
from simpy_astra.config.file_text import PathLike
from simpy_astra.config.json_reader import load_json_object
from simpy_astra.errors import InputError, integer_fix

#: a group id as ASTRA-sim reads one: a decimal integer > 0, no leading zero
_GROUP_ID = re.compile(r"[1-9][0-9]*")
#: ASTRA-sim ignores any comm-group path containing this substring (its "no groups" default)
NO_GROUPS_MARKER = "empty"


def load_comm_groups_json(path: PathLike | None, total_npus: int, job: bool = False) -> dict[int, tuple[int, ...]]:
    """Read a communicator-group JSON: ``{"<group id>": [npu, ...], ...}``.

    Member order is kept as written (native rings follow it). Like ASTRA-sim, a path that is
    None or contains the substring "empty" anywhere (directories included) means "no groups"
    and is not opened.
    """
    if path is None or NO_GROUPS_MARKER in os.fspath(path):
        return {}
    src = os.fspath(path)
    return comm_groups_from_mapping(load_json_object(src, "communicator-group JSON"), src, total_npus, job)


@dataclass(frozen=True)
class WrittenGroups:
    """A comm-group JSON a workload generator wrote into the workload cache. Its path is the
    cache's, not one the user chose, so ASTRA-sim's 'empty' rule does not apply (a cache under
    ``~/empty_runs`` dropped every generated group); ``shown`` is how its errors name it (a
    user's generator with the file it wrote: the fix is in the generator, not in the cache)."""

    path: str
    shown: str
    fix: str = ""  # appended to an error in it (a user's generator: fix the generator)

    def read(self, total_npus: int, job: bool = False) -> dict[int, tuple[int, ...]]:
        try:
            found = load_json_object(self.path, "communicator-group JSON", self.shown)
            return comm_groups_from_mapping(found, self.shown, total_npus, job)
        except InputError as exc:
            if not self.fix:
                raise
            raise InputError(f"{exc.message}{self.fix}") from None


def ignored_comm_groups_warning(path: PathLike | None) -> str | None:
    """The warning for a comm-group file ASTRA-sim (and so we) would not open, else None.

    Any path containing "empty" means "no groups" there; only the literal default ``empty``
    says so on purpose, so a real file such as ``groups_nonempty.json`` gets a warning.
    """
    if path is None or NO_GROUPS_MARKER not in os.fspath(path) or os.fspath(path) == NO_GROUPS_MARKER:
        return None
    return (f"{os.fspath(path)}: comm-group file ignored: ASTRA-sim reads any path containing "
            f"'{NO_GROUPS_MARKER}' as 'no groups'; rename it (or its folder) to use its groups")


def comm_groups_from_mapping(j: Any, src: str, total_npus: int, job: bool = False) -> dict[int, tuple[int, ...]]:
    """A comm-group JSON's object (from a file, or inline in a scenario); errors name ``src``.
    ``job``: the groups of one of ``jobs:``, which name its ranks (``total_npus`` of them)."""
    j = require_mapping(j, src, "communicator groups", '"1": [0, 1]')
    if _plain_groups(j, total_npus):
        return {int(key): tuple(members) for key, members in j.items()}
    groups: dict[int, tuple[int, ...]] = {}  # a group is wrong: the first one is named, with why
    for key, members in j.items():
        if isinstance(key, int) and not isinstance(key, bool):  # a YAML key written as a number
            key = str(key)
        if not isinstance(key, str):
            raise InputError.at(src, show_value(key), "is not a group id; keys must be decimal integers > 0",
                                kind="group")
        if not _GROUP_ID.fullmatch(key) or int(key) > INT32_MAX:
            refuse_another_kind(j, src, "communicator-group JSON")
            raise InputError.at(
                src,
                key,
                "is not a group id; keys must be decimal integers > 0 (0 means all NPUs)"
                + _group_id_fix(key),
                kind="group",
            )
        if not isinstance(members, list) or not members:
            raise InputError.at(
                src, key, f"must be a non-empty list of NPU ids (got {show_value(members)})", kind="group"
            )
        seen: set[int] = set()
        for npu in members:
            if isinstance(npu, bool) or not isinstance(npu, int) or not 0 <= npu < total_npus:
                raise member_error(src, key, npu, total_npus, job)
            if npu in seen:
                raise InputError.at(src, key, f"lists NPU {npu} twice; list each NPU once", kind="group")
            seen.add(npu)
        if int(key) in groups:  # a YAML mapping's 1: beside its '1': (a file's keys are all strings)
            raise InputError.at(src, key, f"is given twice (the number {key} and the string '{key}' are one id); "
                                          f"keep one", kind="group")
        groups[int(key)] = tuple(members)
    return groups


def _plain_groups(j: dict, total_npus: int) -> bool:
    """Every group of ``j`` is valid: a group id as ASTRA-sim reads one (a string of digits, no
    leading zero, within an int) for a non-empty list of distinct ints 0 .. ``total_npus`` - 1
    (no bool). What a valid file is, checked over the whole file at once, in C loops: group by
    group, a file of 300,000 groups took seconds (a Python step per group and per member);
    any other file is walked group by group for the error."""
    keys, lists = list(j), list(j.values())
    if not (all(type(key) is str for key in keys) and all(map(_GROUP_ID.fullmatch, keys))
            and max(map(len, keys), default=0) <= len(str(INT32_MAX))
            and all(int(key) <= INT32_MAX for key in keys if len(key) == len(str(INT32_MAX)))):
        return False
    if not all(type(members) is list and members for members in lists):
        return False
    return plain_members(lists, total_npus, distinct=True)


def plain_members(lists: list, total_npus: int, distinct: bool = False) -> bool:
    """Every member of every group in ``lists`` is an int (no bool) in 0 .. ``total_npus`` - 1,
    and with ``distinct`` no group lists one twice: checked over all groups at once, in C loops
    (a file may hold 300,000 groups)."""
    ids = [npu for members in lists for npu in members]
    return (all(type(npu) is int for npu in ids) and 0 <= min(ids, default=0) and max(ids, default=0) < total_npus
            and (not distinct or len(ids) == sum(map(len, map(set, lists)))))


def member_error(src: str, group: object, npu: object, total_npus: int, job: bool = False) -> InputError:
    """``<src>: group '<group>' lists <npu>, which is not an NPU id`` (or a job's rank), with the
    ids it may list and, for a float, the integer to write."""
    return InputError.at(
        src,
        str(group),
        f"lists {show_value(npu)}, which is not "
        + (f"a rank of the job; it has {total_npus} ranks (0..{total_npus - 1}), which its groups name"
           if job else f"an NPU id; the network has {total_npus} NPUs (0..{total_npus - 1})")
        + integer_fix(npu, 0, total_npus - 1),
        kind="group",
    )


def _group_id_fix(key: str) -> str:
    """The fix for a group id of digits that is refused: too large for an int, or leading zeros."""
    if not key.isascii() or not key.isdigit() or int(key) == 0:
        return ""
    if int(key) > INT32_MAX:
        return f" and at most {INT32_MAX} (ASTRA-sim keeps them in an int)"
    return f"; write {int(key)}"
