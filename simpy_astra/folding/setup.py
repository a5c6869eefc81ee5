"""What folding needs to know before any trace is read: the translations each dimension's
delays and configured algorithms allow, and whether folding can apply at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from simpy_astra.collectives import resolve, subset_algorithm_name, unchecked_claim
from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER
from simpy_astra.engine.collective_timer import replaced_algorithms
from simpy_astra.folding.frames import dimension_shifts, dimension_xors
from simpy_astra.folding.keys import RankClasses
from simpy_astra.folding.links import link_model_note, link_shifts, link_xors
from simpy_astra.infra.grid import Grid
from simpy_astra.network.backends import BackendSpec
from simpy_astra.plugins import is_ours


@dataclass
class FoldSetup:
    """What folding needs to know before any trace is read."""

    grid: Grid
    #: per dimension, the shifts that keep every unaware delay
    allowed: list[set[int]]
    #: ... that also rotate the algorithm configured there (when collectives use the dimensions)
    with_dims: list[set[int]]
    #: communicator-group subsets may be compared in ring order from each NPU
    rotate_groups: bool
    #: the network's dimensions (BasicTopology), for the XOR masks that keep their delays
    dims: list = field(default_factory=list)
    #: the algorithms configured on the dimensions commute with XOR (collectives may use them)
    xor_dims: bool = False
    #: communicator-group subsets may be compared in XOR order from each NPU
    xor_groups: bool = False
    #: some configured algorithm commutes with XOR: XOR translations are tried only then
    #: (without one they may only keep every group position, which rotations mostly already
    #: do, and each try reads a few traces again)
    xor_algorithms: bool = False
    #: links fold too (the congestion-aware backend): translations must move the links and
    #: routes onto themselves (:mod:`simpy_astra.folding.links`)
    links: bool = False
    #: the run's collective timer times all-reduces, reduce-scatters and all-gathers by their
    #: members alone (a cluster preset's NCCL model: :mod:`simpy_astra.engine.collective_timer`):
    #: a rank summary's groups that run only those are compared as sets (:meth:`GroupKeys.set_key`)
    timed_sets: bool = False
    #: a cluster preset's GPUs a node, 0 without one: its routes (:mod:`simpy_astra.network.rails`)
    #: depend on whether two GPUs share a node and whether they share a rail, which an id
    #: shift's carry out of a node changes (GPUs 6 and 8 of 8-GPU nodes, PXN between nodes,
    #: shifted by 3 are 9 and 11, in one node), and so do the nodes a group spans
    node_gpus: int = 0

    @property
    def id_shifts(self) -> bool:
        """Id shifts (:class:`IdShifts`) differ from grid translations: several dimensions;
        not when links fold (a carry moves a link onto a pair that is no link)."""
        return len(self.grid.dims) > 1 and not self.links

    @property
    def xor_possible(self) -> bool:
        """XOR translations are worth trying: an algorithm commutes with them and every
        dimension is a power of two."""
        return self.xor_algorithms and bool(self.dims) and all(
            not t.npus_count & (t.npus_count - 1) for t in self.dims)

    @cached_property
    def xor_allowed(self) -> list[set[int]]:
        """Per dimension, the XOR masks that keep every unaware delay (worked out on first
        use: O(n^2) per dimension, paid only by runs that other frames did not fold fully);
        when links fold, those that also move links and routes onto themselves."""
        masks = [dimension_xors(t) for t in self.dims]
        if self.links:
            masks = [None if m is None else link_xors(t, m) for t, m in zip(self.dims, masks, strict=True)]
        return masks

    def xor_generators(self) -> list[int]:
        """XOR translations, each within one dimension, that generate all that keep every
        unaware delay: on power-of-two dimensions a XOR changes each coordinate on its own
        (no carries), so the two NPUs of a pair still first differ in the same dimension,
        where its mask must keep delays; those masks form a group per dimension, of which a
        few generate the rest (a switch: the single bits; a ring of 8: 3 and 4)."""
        out = []
        for d, masks in enumerate(self.xor_allowed):
            span = {0}
            for c in sorted(masks):
                if c not in span:
                    span |= {x ^ c for x in span}
                    out.append(c * self.grid.strides[d])
        return out

    def allows(self, ranks: RankClasses) -> Callable[[int], bool]:
        """Which grid translations keep every delay (and, when collectives of ``ranks`` run
        on the dimension rings, their algorithms)."""
        allowed = self.with_dims if ranks.uses_dims else self.allowed
        return lambda h: all(c in allowed[d] for d, c in enumerate(self.grid.coords(h)))

    def id_shift_allowed(self, h: int) -> bool:
        """Whether id shift ``h`` keeps every unaware delay (collectives on the dimension
        rings are never moved by id shifts: a carry breaks a dimension's line). On a cluster
        preset only whole nodes' shifts do (:attr:`node_gpus`).

        A delay is decided in the lowest dimension in which two NPUs differ, by their two
        coordinates there. Let ``j`` be the lowest dimension of ``h`` with a non-zero
        coordinate ``h_j``: below it nothing moves. Two NPUs that first differ in ``j`` both
        move by ``h_j`` there (no carry comes from below), so ``h_j`` must keep that
        dimension's delays. Two NPUs that first differ in ``d > j`` share every lower
        coordinate, hence the carry into ``d``: both move by ``h_d`` or both by ``h_d + 1``;
        shifts that keep a dimension's delays are a subgroup, so holding both means holding
        every shift of ``d``."""
        if self.node_gpus and h % self.node_gpus:
            return False
        coords = self.grid.coords(h)
        j = next(d for d, c in enumerate(coords) if c)
        return coords[j] in self.allowed[j] and all(
            len(self.allowed[d]) == self.grid.dims[d] for d in range(j + 1, len(coords)))

    @classmethod
    def for_run(cls, backend: BackendSpec, network_config: Any, system: Any, remote_memory: Any, dims: list,
                why: list[str] | None = None) -> FoldSetup | None:
        """None when folding cannot apply: it needs a backend that folds (``BackendSpec.folds``: NPUs
        that interact only through messages whose delays depend on the pair alone, or links
        that fold with them), no shared remote-memory server, and no custom collective files
        (their rank maps are not moved by translations). ``network_config`` is the parsed
        network file (its element models). ``why`` receives the reason, in words."""
        def no(reason: str) -> None:
            if why is not None:
                why.append(reason)

        if math.prod(t.npus_count for t in dims) < 2:
            return None
        how = backend.folds
        if how is None:
            return no(f"the {backend.name} backend does not say how it folds")
        if how == "links":
            # deferred: only link/switch models need network.models; an analytical run does not load it
            from simpy_astra.network.models import lookup_link, lookup_switch

            link, switch = (None, None) if network_config is None else (network_config.link_model,
                                                                        network_config.switch_model)
            note = link_model_note(lookup_link(link) if link else None, lookup_switch(switch) if switch else None)
            if note is not None:
                return no(note)
            sprayed = next((d for d, t in enumerate(dims) if getattr(t, "sprays", False)), None)
            if sprayed is not None:  # (only the packet backend sprays)
                return no(f"network dimension {sprayed} sprays packets over several paths, which "
                          f"translations are not checked to keep")
        if system.custom_implementations or system.per_node_custom:
            return no("custom collective files name ranks that translations do not move")
        if remote_memory.memory_type in ("PER_NODE_MEMORY_EXPANSION", "MEMORY_POOL"):
            return no(f"remote memory {remote_memory.memory_type} is shared between NPUs")
        allowed = [dimension_shifts(t) for t in dims]
        if how == "links":
            allowed = [link_shifts(t, a) for t, a in zip(dims, allowed, strict=True)]
        with_dims = [set(a) for a in allowed]
        xor_dims = True
        xor_algorithms = False
        # the run's collective timer (a preset's NCCL model) times these by their members: never run
        replaced = replaced_algorithms(None if network_config is None else network_config.nccl)
        for kind, names in system.implementations.items():
            if kind in replaced:
                continue
            for d, name in enumerate(names):
                choice = resolve(name)
                if choice is None:
                    return no(f"collective algorithm {name!r} states no symmetry")
                xor_algorithms = xor_algorithms or choice.algorithm.xor_symmetric
                if choice.spans_all_npus:  # one ring over NPU ids: only 1-D grids rotate it
                    if len(dims) > 1 or not choice.algorithm.rotation_symmetric:
                        with_dims = [{0} for _ in dims]
                    xor_dims = False
                elif d < len(with_dims):
                    if not choice.algorithm.rotation_symmetric:
                        with_dims[d] = {0}
                    xor_dims = xor_dims and choice.algorithm.xor_symmetric
        # a group subset runs the system's group algorithm, else the configured one if the list
        # has one entry, else ring
        subsets = [resolve(system.group_implementations.get(kind) or subset_algorithm_name(names)).algorithm
                   for kind, names in system.implementations.items() if names]
        setup = cls(Grid([t.npus_count for t in dims]), allowed, with_dims,
                    all(a.rotation_symmetric for a in subsets), dims=list(dims), xor_dims=xor_dims, xor_groups=all(a.xor_symmetric for a in subsets),
                    xor_algorithms=xor_algorithms, links=how == "links",
                    timed_sets=replaced >= {ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER})
        if network_config is not None and network_config.rails is not None:
            setup.node_gpus = network_config.rails.gpus_per_node
        if all(a == {0} for a in allowed) and not setup.xor_possible:
            return no("no shift of any network dimension keeps its delays" if how == "pairs" else
                      "no shift of any network dimension moves its links and routes onto themselves")
        return setup


def trusted_claims(system: Any, link_model_name: str | None = None) -> list[str]:
    """A warning per algorithm (and link model) of the user's whose symmetry claim a folded run
    trusted: our own are checked by tests (tests/test_fold_claims.py), a plug-in's by nobody.
    ``link_model_name``: the registered name of the run's link model (looked up here: only
    runs with one need :mod:`simpy_astra.network.models`)."""
    link_model = None
    if link_model_name:
        from simpy_astra.network.models import lookup_link

        link_model = lookup_link(link_model_name)
    names = sorted({name for names in system.implementations.values() for name in names}
                   | set(system.group_implementations.values()))
    claims = [f"collective {claim}" for claim in map(unchecked_claim, names) if claim is not None]
    if link_model is not None and not is_ours(link_model) and \
            link_model.symmetric is True:
        claims.append(f"link model '{link_model.__module__}:{link_model.__qualname__}' (symmetric = True)")
    return [f"symmetry folding trusted the claim of {claim}, which no test has checked: a wrong claim gives "
            f"wrong figures; compare once with --fold-symmetry off (fold_symmetry: false)" for claim in claims]
