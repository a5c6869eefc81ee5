"""Where a collective node runs: communicator groups and plans.

A plan says, per logical dimension, which algorithm runs on which ring of NPUs (for the
default communicator the network's dimensions; for a communicator group one ring of its
members). Custom collectives (ASTRA-sim's per-rank ET files, or MSCCL-IR XML) are read when
the run is built, before time starts (:mod:`simpy_astra.collectives.custom`); a run itself does
no I/O. The planner is asked by an NPU with its system layer and its groups, and knows nothing
else of the NPU.
"""

from __future__ import annotations

import json
from dataclasses import replace

from simpy_astra.collectives import resolve, subset_algorithm_name
from simpy_astra.collectives.custom.files import CustomCollectives
from simpy_astra.collectives.logical import LogicalDim
from simpy_astra.config import SystemConfig
from simpy_astra.config.comm_groups import member_error, plain_members
from simpy_astra.engine.system_layer import CollectivePlan, StreamCounter, SystemLayer
from simpy_astra.engine.tags import first_stream_id
from simpy_astra.errors import InputError


class CommunicatorGroup:
    """One NPU's view of a communicator group: members and its own stream-id counter."""

    __slots__ = ("group_id", "members", "streams", "plans", "_shared", "_positions")

    def __init__(self, group_id: int, members: tuple[int, ...], shared: CommunicatorGroup | None = None) -> None:
        self.group_id = group_id
        self.members = members
        #: the group's view whose member places every view of it reads (None: this one)
        self._shared = shared
        self._positions: dict[int, int] | None = None
        self.streams = StreamCounter(first_stream_id(group_id))
        self.plans: dict[tuple, CollectivePlan] = {}

    @property
    def positions(self) -> dict[int, int]:
        """Member -> its (first) place in ``members``: made when first asked, once for every view
        of the group (each member asking ``members.index``, or ``in members``, scanned an
        n-member group n times, hours at 262,144 GPUs; made lazily, as a file may hold 300,000
        groups that no NPU asks about)."""
        if self._shared is not None:
            return self._shared.positions
        if self._positions is None:
            self._positions = {m: i for i, m in reversed(list(enumerate(self.members)))}
        return self._positions

    def member_view(self) -> CommunicatorGroup:
        """A member's own view: its stream ids and plans, the members and places shared."""
        return CommunicatorGroup(self.group_id, self.members, self if self._shared is None else self._shared)


class CollectivePlanner:
    """Communicator groups and collective plans of one run (what an NPU asks when it issues
    a collective or reads a METADATA node)."""

    def __init__(self, config: SystemConfig, total_npus: int) -> None:
        self.config = config
        self.total_npus = total_npus
        self.customs = CustomCollectives(config)
        self._pg_texts: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        self._group_views: dict[tuple[int, tuple[int, ...]], CommunicatorGroup] = {}
        #: the comm-group file's groups, as the views every non-member shares
        self._file_groups: dict[int, CommunicatorGroup] = {}

    def add_file_groups(self, comm_groups: dict[int, tuple[int, ...]], source: str) -> None:
        """The groups of the comm-group file, ``source`` naming them in an error (checked
        against the NPU count: all at once, as a file may hold 300,000 groups; group by group,
        in :meth:`make_group`, where one is wrong or its ids are not ints, to name it or take
        them as ints). A file or scenario was checked when read; this check is for groups a
        Python caller gives :class:`SimulationInputs` itself."""
        checked = plain_members(list(comm_groups.values()), self.total_npus)
        for gid, members in comm_groups.items():
            self._file_groups[gid] = self.make_group(gid, members, source=source, checked=checked)

    def file_group_members(self) -> dict[int, tuple[int, ...]]:
        """Group id -> members, for every group of the comm-group file."""
        return {gid: g.members for gid, g in self._file_groups.items()}

    def group_for(self, npu_id: int, groups: dict[int, CommunicatorGroup],
                  group_id: int) -> CommunicatorGroup | None:
        """Communicator group ``group_id`` as NPU ``npu_id``, whose own views are ``groups``,
        sees it: its own view (one a METADATA node declared, or of a file group it is a member
        of, made the first time it is asked for and kept in ``groups``), else the view of the
        file's group every non-member shares, else None. Made when first asked, not for every
        group of the file when the NPU is built: 64 NPUs and a file of 300,000 groups were 19
        million entries copied and a million views made, the few a run uses among them."""
        group = groups.get(group_id)
        if group is not None:
            return group
        shared = self._file_groups.get(group_id)
        if shared is not None and npu_id in shared.positions:  # a member: its own streams and plans
            group = groups[group_id] = shared.member_view()
            return group
        return shared

    def make_group(self, group_id: int, members, npu_id: int | None = None,
                   source: str = "communicator groups", shown: str = "",
                   checked: bool = False) -> CommunicatorGroup:
        """NPU ``npu_id``'s view of a communicator group (an error names ``source``, where its
        members were given, and the group as ``shown`` there, else by its id; ``checked``:
        the members are known NPU ids already, as ints).

        A member gets its own view (stream ids, plans); every non-member of a group shares
        one read-only view, as a non-member only reads ``members`` for its error messages.
        That keeps n NPUs x g groups at O(n + sum of group sizes) objects."""
        key = (group_id, tuple(members))
        shared = self._group_views.get(key)
        if shared is None:
            ids = key[1] if checked else tuple(self._npu_id(m, source, shown or group_id) for m in members)
            shared = self._group_views[key] = CommunicatorGroup(group_id, ids)
        if npu_id is not None and npu_id in shared.positions:
            return shared.member_view()
        return shared

    def _npu_id(self, member, source: str, group: object) -> int:
        """``member`` as an NPU id (an int as Python takes one), else the error naming it."""
        try:
            npu = int(member)
        except (TypeError, ValueError):
            raise member_error(source, group, member, self.total_npus) from None
        if not 0 <= npu < self.total_npus:
            raise member_error(source, group, member, self.total_npus)
        return npu

    def parse_process_groups(self, text: str) -> list[tuple[int, tuple[int, ...]]]:
        """(pg_name, ranks) of a METADATA node's ``inputs.values``; parsed once per distinct
        text (every rank usually carries the same list). Raises ValueError/KeyError/TypeError."""
        parsed = self._pg_texts.get(text)
        if parsed is None:
            parsed = []
            for item in json.loads(text[2:-2]):
                ranks = tuple(item["ranks"]) or tuple(range(self.total_npus))
                parsed.append((int(item["pg_name"]), ranks))
            self._pg_texts[text] = parsed
        return parsed

    def _custom_for(self, kind: str, node_id: int) -> str | None:
        cfg = self.config
        if node_id in cfg.per_node_custom:
            return cfg.per_node_custom[node_id]
        return cfg.custom_implementations.get(kind)

    def collective_plan(self, system: SystemLayer, groups: dict[int, CommunicatorGroup], source: str,
                        kind: str, pg_name: str, node_id: int) -> tuple[CollectivePlan, str | None]:
        """Which algorithm(s) and which NPUs a collective node runs on, for the NPU whose
        system layer is ``system``, whose communicator groups are ``groups`` and whose trace
        is ``source`` (for errors), and the custom collective that runs it, if any."""
        return self._plan(system, groups, source, kind, pg_name, node_id, self._custom_for(kind, node_id))

    def system_plan(self, system: SystemLayer, groups: dict[int, CommunicatorGroup], source: str,
                    kind: str, pg_name: str, node_id: int) -> CollectivePlan:
        """:meth:`collective_plan`'s plan of the system's own algorithms, whatever custom collective
        it gives ``kind`` or the node: the NPUs NCCL's broadcast runs on (its all-gather's)."""
        return self._plan(system, groups, source, kind, pg_name, node_id, None)[0]

    def _plan(self, system: SystemLayer, groups: dict[int, CommunicatorGroup], source: str,
              kind: str, pg_name: str, node_id: int, custom: str | None) -> tuple[CollectivePlan, str | None]:
        npu_id = system.npu_id
        if pg_name in ("", "0"):
            if custom is not None:
                return CollectivePlan([], [], None, system.default_streams), custom
            return system.default_plan(kind), None
        try:
            gid = int(pg_name)
        except ValueError:
            raise InputError.in_file(source, f"node {node_id}: pg_name '{pg_name}' is not a group id") from None
        group = self.group_for(npu_id, groups, gid)
        if group is None:
            given = sorted(self._file_groups)  # a scenario's user never gave the flag the fix named
            fix = (f"the communicator groups given define {', '.join(map(str, given[:8]))}"
                   f"{', ...' if len(given) > 8 else ''}: add it to them" if given else
                   "no communicator groups are given: give them (a scenario's comm_groups, or "
                   "--comm-group-configuration)")
            raise InputError.in_file(source, f"node {node_id}: communicator group {gid} is not defined; {fix}, or "
                                     f"declare it in a METADATA node")
        if npu_id not in group.positions:
            raise InputError.in_file(source, f"node {node_id}: NPU {npu_id} is not a member of "
                                     f"communicator group {gid} {list(group.members)}")
        key = (kind, custom)
        plan = group.plans.get(key)
        if plan is None:
            plan = self._group_plan(system, group, kind, custom)
            group.plans[key] = plan
        return plan, custom

    def _group_plan(self, system: SystemLayer, group: CommunicatorGroup, kind: str,
                    custom: str | None) -> CollectivePlan:
        members = group.members
        ring = LogicalDim(members, group.positions[system.npu_id], local=True)
        if custom is not None:
            return CollectivePlan([], [ring], [True], group.streams)
        if len(members) == self.total_npus:
            base = system.default_plan(kind)
            return CollectivePlan(base.choices, base.dims, [True] * len(base.dims), group.streams)
        # a group subset is one ring: its algorithm is the configured one if the list has a
        # single entry, otherwise ring (the reference's rule), unless the system names the
        # group's own (<stem>-group-implementation); names were validated at load
        names = self.config.implementations.get(kind) or ("ring",)
        chosen = self.config.group_implementations.get(kind)  # ours: what the group runs
        name = chosen or subset_algorithm_name(names)
        choice = resolve(name)
        key = kind.replace("_", "-") + ("-group-implementation" if chosen else "-implementation")
        if kind not in choice.algorithm.kinds:
            raise InputError.at(self.config.source, key,
                                f"is {name}, which does not implement {kind}; use ring or direct")
        if not choice.algorithm.group_subsets:
            raise InputError.at(self.config.source, key,
                                f"is {name}, which cannot run on communicator group "
                                f"{group.group_id} {list(members)} (a subset of the "
                                f"{self.total_npus} NPUs; the reference crashes here); use ring or "
                                f"direct for {kind}")
        return CollectivePlan([replace(choice, spans_all_npus=False)], [ring],
                              [True], group.streams)

