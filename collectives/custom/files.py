"""Custom-collective files, read before the run: ASTRA-sim's per-rank ET graphs
(``PREFIX.{k}.et``) and MSCCL-IR XML, each turned into the one phase a rank runs."""

from __future__ import annotations

import os
from collections.abc import Callable

from simpy_astra.collectives.custom.et_graph import custom_et
from simpy_astra.config.system import SystemConfig
from simpy_astra.errors import InputError
from simpy_astra.workloads.chakra import EtError, read_et, validate_graph


class CustomCollectives:
    """Every custom-collective file the system config names, read before the run.

    ``PREFIX.{k}.et`` for k = 0, 1, ... while such a file exists; an MSCCL-IR ``.xml`` file
    parsed once, its per-rank graphs built per collective size when first asked for. A file
    that could not be read is reported when a collective uses it, as before."""

    def __init__(self, config: SystemConfig) -> None:
        self.config = config
        self._et: dict[str, tuple[list, str] | Exception] = {}
        self._xml: dict[str, object] = {}
        self._msccl: dict[tuple[str, int], dict[int, list]] = {}
        self._validated: set[str] = set()
        prefixes = {*config.custom_implementations.values(), *config.per_node_custom.values()}
        for prefix in sorted(prefixes):
            if prefix.endswith(".xml"):
                try:
                    # deferred: only MSCCL XML files need msccl_xml; an ASTRA-sim run does not load it
                    from simpy_astra.collectives.custom.msccl_xml import (
                        parse_msccl_xml,  # XML parsing: only MSCCL users pay
                    )

                    self._xml[prefix] = parse_msccl_xml(prefix)
                except EtError as exc:
                    self._xml[prefix] = exc
                continue
            k = 0
            while os.path.exists(path := f"{prefix}.{k}.et"):
                try:
                    self._et[path] = (read_et(path)[1], path)
                except EtError as exc:
                    self._et[path] = exc
                k += 1

    def phase(self, prefix: str, position: int, collective_bytes: int,
              rank_of: tuple[int, ...] | None) -> tuple[Callable, tuple]:
        """The algorithm and arguments of one rank's phase of a custom collective (the whole
        collective is one phase: the rank's graph run by :func:`custom_et`)."""
        nodes, source = self.graph(prefix, position, collective_bytes)
        return custom_et, (nodes, source, rank_of)

    def graph(self, prefix: str, position: int, collective_bytes: int) -> tuple[list, str]:
        """Rank ``position``'s graph of a custom collective: ``PREFIX.{position}.et`` as in
        ASTRA-sim, or rank ``position`` of an MSCCL-IR file when the path ends in ``.xml``."""
        if prefix.endswith(".xml"):
            root = self._xml[prefix]
            if isinstance(root, Exception):
                raise root
            key = (prefix, collective_bytes)
            ranks = self._msccl.get(key)
            if ranks is None:
                # deferred: only MSCCL XML files need msccl_xml; an ASTRA-sim run does not load it
                from simpy_astra.collectives.custom.msccl_xml import msccl_ranks

                ranks = self._msccl[key] = msccl_ranks(root, prefix, collective_bytes)
            if position not in ranks:
                raise InputError(f"{prefix}: MSCCL-IR algorithm has no <gpu id=\"{position}\">")
            return ranks[position], prefix
        path = f"{prefix}.{position}.et"
        hit = self._et.get(path)
        if hit is None:
            raise InputError(f"{self.config.source}: custom collective file {path} does "
                             f"not exist (paths resolve from the working directory)")
        if isinstance(hit, Exception):
            raise hit
        if path not in self._validated:
            validate_graph(path, hit[0])
            self._validated.add(path)
        return hit
