"""The layout's promises, checked on the source: imports run one way, every module is tied into
the graph, the package root holds only its face, the system layer names no algorithm, and no
module grows past what one reader can hold.

Imports are read from the source (every ``import`` anywhere in a file, type-only and deferred
ones included: a deferred import is still a dependency), so nothing is executed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
#: source folders and the package each is installed as (setup.cfg's package_dir)
PACKAGES = {"simpy_astra": "simpy_astra", "collectives": "simpy_astra.collectives",
            "topologies": "simpy_astra.topologies", "workloads": "simpy_astra.workloads"}
MAX_LINES = 600


def modules() -> dict[str, Path]:
    """Module name -> file, for every module of the project (tests and benchmarks aside)."""
    out = {}
    for folder, package in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def import_graph() -> nx.DiGraph:
    known = modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                           for a in node.names]
            for target in targets:
                if target in known and target != name:
                    graph.add_edge(name, target)
    return graph


def test_no_import_circles() -> None:
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert circles == []


def test_every_module_is_tied_into_the_import_graph() -> None:
    """A static graph connects the whole source into one piece (packages' ``__init__`` files that
    only hand names on aside): a value can be followed through plain imports."""
    graph = import_graph()
    graph.remove_nodes_from([m for m in list(graph) if modules()[m].name == "__init__.py" and graph.degree(m) == 0])
    pieces = sorted(nx.weakly_connected_components(graph), key=len)
    assert len(pieces) == 1, pieces[:-1]


#: the package's face: what users' scripts import and the command's entry point
ROOT_MODULES = {"__init__.py", "__main__.py", "simulation.py", "errors.py", "plugins.py"}


def test_the_package_root_holds_only_its_face() -> None:
    """Everything else sits in a folder named for what it is (engine/, running/, infra/, ...)."""
    assert {p.name for p in (ROOT / "simpy_astra").glob("*.py")} == ROOT_MODULES


def test_the_system_layer_imports_no_collective_algorithm() -> None:
    """It may use the registry and the algorithm interface (base, logical shapes), nothing else."""
    allowed = {"simpy_astra.collectives", "simpy_astra.collectives.base", "simpy_astra.collectives.logical"}
    used = {t for t in import_graph().successors("simpy_astra.engine.system_layer") if t.startswith("simpy_astra.collectives")}
    assert used <= allowed, used - allowed


def test_no_module_is_longer_than_one_reader_can_hold() -> None:
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
    assert len((ROOT / "simpy_astra" / "simulation.py").read_text(encoding="utf-8").splitlines()) < 300
