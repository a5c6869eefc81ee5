"""How an NPU issues its communication nodes: a collective to its system layer (or, on a
cluster preset, to NCCL's timing), a send or a receive to the network, a METADATA node's
communicator groups; each node's fields checked as it is issued, an error naming the node.

:class:`NpuCommunication` is the part of :class:`~simpy_astra.engine.npu.Npu` that issues
the communication nodes of its graph; what it reads of the NPU is its contract,
:class:`~simpy_astra.engine.npu_contracts.CommunicatingNpu`.
"""

from __future__ import annotations

from simpy_astra.engine.nccl_names import BROADCAST as NCCL_BROADCAST
from simpy_astra.engine.npu_contracts import CommunicatingPart
from simpy_astra.engine.system_layer import has_peers
from simpy_astra.engine.tags import native_tag
from simpy_astra.errors import InputError, with_article
from simpy_astra.infra.units import replay_duration_ns
from simpy_astra.workloads.chakra.types import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    BROADCAST,
    COLLECTIVE_NAMES,
    REDUCE_SCATTER,
)

#: Chakra collective types the system layer runs, by its names for them
COLLECTIVE_KINDS = {ALL_REDUCE: "all_reduce", ALL_GATHER: "all_gather", ALL_TO_ALL: "all_to_all",
                    REDUCE_SCATTER: "reduce_scatter"}


class NpuCommunication(CommunicatingPart):
    """Communication nodes issued (mixed into :class:`~simpy_astra.engine.npu.Npu`), reading of
    the NPU what :class:`~simpy_astra.engine.npu_contracts.CommunicatingNpu` declares.
    """

    def _collective(self, node) -> None:
        comm_type = node.get_int("comm_type")
        size = node.get_int("comm_size")
        if comm_type == BROADCAST:
            self._broadcast(node, size)
            return
        kind = COLLECTIVE_KINDS.get(comm_type)
        if kind is None:
            name = COLLECTIVE_NAMES.get(comm_type, str(comm_type))
            raise InputError.in_file(self.source, f"node {node.id}: collective type {name} is not supported "
                                     f"(supported: ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST)")
        priority = node.get_int("comm_priority", 0)
        pg = node.get_str("pg_name", "")
        plan, custom, involved = self._planned(node, kind)
        node_id = node.id
        if custom is None:  # NCCL's model too: a group of one ran in 0 ns, where messages played refused it
            self._refuse_lone(node, kind, pg, plan, involved)
        nccl = self.services.nccl
        if nccl is not None and kind in nccl.TIMED and custom is None:
            nccl.issue(self, plan.dims, plan.involved or involved, size, node_id, kind, node.name)
            return
        if self.collective_log is not None and custom is None:
            self.collective_log.append((node_id, kind, size, plan, tuple(involved), plan.stream_owner.value,
                                        self.clock.env.now))
        try:
            self.system.generate_collective(kind, size, involved, plan, priority, custom,
                                            lambda: self.complete_soon(node_id))
        except InputError as exc:  # e.g. a system-JSON setting this collective cannot run with
            raise InputError.in_file(self.source, f"node {node_id}: {exc}") from None

    def _broadcast(self, node, size: int) -> None:
        """A BROADCAST: timed as NCCL's ring broadcast where NCCL's model times the run's
        collectives (a cluster preset's), on the NPUs an all-gather of its group runs over,
        whatever the system plays its all-gathers with (a custom collective too: NCCL runs a
        broadcast by its own ring); elsewhere replayed from its ``duration_micros``, as
        ASTRA-sim replays one (it has no broadcast to simulate)."""
        nccl = self.services.nccl
        if nccl is None or NCCL_BROADCAST not in nccl.TIMED:
            self.clock.register(replay_duration_ns(node.duration_micros), self.complete_soon, node.id)
            return
        try:
            plan, _, involved = self._planned(node, COLLECTIVE_KINDS[ALL_GATHER], "broadcast")
            self._refuse_lone(node, NCCL_BROADCAST, node.get_str("pg_name", ""), plan, involved)
        except InputError as exc:
            if exc.file == self.source:  # the node's own fields: named already
                raise
            raise InputError.in_file(self.source, f"node {node.id}: this broadcast runs on the NPUs its group's "
                                     f"all-gather runs over, which has no plan here: {exc}") from None
        nccl.issue(self, plan.dims, plan.involved or involved, size, node.id, NCCL_BROADCAST, node.name)

    def _planned(self, node, kind: str, timed: str = "") -> tuple:
        """Collective node ``node``'s plan, custom collective and involved dimensions as ``kind``'s;
        ``timed``: the collective NCCL times on ``kind``'s NPUs instead, whatever custom collective
        the system gives ``kind`` (named in errors)."""
        planner, pg = self.services.planner, node.get_str("pg_name", "")
        if timed:
            plan, custom = planner.system_plan(self.system, self.groups, self.source, kind, pg, node.id), None
        else:
            plan, custom = planner.collective_plan(self.system, self.groups, self.source, kind, pg, node.id)
        return plan, custom, self._involved(node, kind, plan, custom, timed)

    def _involved(self, node, kind: str, plan, custom, timed: str = "") -> list[bool]:
        """The dimensions a default-group collective runs over: its ``involved_dim``, by default
        all (ASTRA-sim's four, and past four every one, where ASTRA-sim reads past its default's
        end). A list shorter than the collective's dimensions is refused: ASTRA-sim reads past its
        end too, and here the dimensions it leaves out ran without a word (``timed``: the
        collective NCCL times on ``kind``'s dimensions, named instead)."""
        if not node.has_attr("involved_dim"):
            return [True] * max(4, len(plan.dims))
        involved = list(node.get_bool_list("involved_dim"))
        if plan.involved is None and custom is None and len(involved) < len(plan.dims):
            key = kind.replace("_", "-") + "-implementation"
            where = f"{key} in {self.config.source})"
            why = f"(its all-gather's, {where}; " if timed else f"({where}; ASTRA-sim reads past the list's end; "
            raise InputError.in_file(self.source, f"node {node.id}: involved_dim lists {len(involved)} dimension(s), but "
                                     f"this {timed or kind.replace('_', '-')} runs over {len(plan.dims)} {why}"
                                     f"give one entry per dimension")
        return involved

    def _refuse_lone(self, node, kind: str, pg: str, plan, involved: list[bool]) -> None:
        """Refuse a collective with no other NPU to run with (the reference never finishes
        it; a broadcast NCCL's model times would take 0 ns, its recorded duration unread),
        naming the node's field that leads there: its pg_name (a group of one NPU) or its
        involved_dim (no dimension marked)."""
        inv = plan.involved if plan.involved is not None else involved
        if has_peers(plan, inv):
            return
        what = with_article(kind)
        why = ("NCCL's model, which times a preset's broadcasts, would give it 0 ns" if kind == NCCL_BROADCAST
               else "the reference never finishes it")
        if plan.involved is not None:  # a communicator group's plan
            members = [m for dim in plan.dims for m in dim.members]
            raise InputError.in_file(self.source, f"node {node.id}: pg_name '{pg}' is communicator group {pg} "
                                     f"{members}, of one NPU, so {what} has no other NPU to run with ({why}); "
                                     f"give group {pg} two or more NPUs, or leave out the node's pg_name")
        shown = "[" + ", ".join("true" if b else "false" for b in involved) + "]"
        raise InputError.in_file(self.source, f"node {node.id}: involved_dim {shown} marks none of the "
                                 f"{len(plan.dims)} dimension(s) {what} runs over, so it has no other NPU to run "
                                 f"with ({why}); mark one true, or leave out involved_dim (all dimensions)")

    def _send(self, node) -> None:
        src = node.get_int("comm_src", self.npu_id)
        if src != self.npu_id:
            raise InputError.in_file(self.source, f"node {node.id}: COMM_SEND has comm_src {src}, "
                                     f"but it runs on NPU {self.npu_id}")
        dst = node.get_int("comm_dst")
        self._check_peer(node, dst, "comm_dst")
        size = node.get_int("comm_size")
        tag = native_tag(node.get_int("comm_tag"))
        self.services.network.send(self.npu_id, dst, tag, size, self.complete_soon, node.id)

    def _recv(self, node) -> None:
        src = node.get_int("comm_src")
        self._check_peer(node, src, "comm_src")
        dst = node.get_int("comm_dst", self.npu_id)
        if dst != self.npu_id:
            raise InputError.in_file(self.source, f"node {node.id}: COMM_RECV has comm_dst {dst}, "
                                     f"but it runs on NPU {self.npu_id}")
        size = node.get_int("comm_size")
        tag = native_tag(node.get_int("comm_tag"))
        self.services.network.recv(self.npu_id, src, tag, size, self.complete_soon, node.id)

    def _check_peer(self, node, peer: int, field: str) -> None:
        if not 0 <= peer < self.services.total_npus or peer == self.npu_id:
            raise InputError.in_file(self.source, f"node {node.id}: {field} {peer} must be another NPU "
                                     f"id in 0..{self.services.total_npus - 1}")

    def _metadata(self, node) -> None:
        """Communicator groups declared by a METADATA node's ``inputs.values``."""
        text = node.inputs_values
        if not text:
            return
        try:
            for pg, ranks in self.services.planner.parse_process_groups(text):
                self.groups[pg] = self.services.planner.make_group(
                    pg + 1, ranks, self.npu_id, f"{self.source}: node {node.id}: METADATA", str(pg))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError.in_file(self.source, f"node {node.id}: METADATA inputs.values is not a "
                                     f"process-group list ({exc})") from None
