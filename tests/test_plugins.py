"""Algorithms and topologies from the user's own modules, with the package untouched.

The user's module and scenario live in a temporary folder (the working directory of the
run); figures are checked against closed forms derived here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
N, SIZE, LAT, GBPS, E, LOCAL_MEM = 8, 1 << 20, 500.0, 50.0, 10, 50


def one_hop_ns(size: int) -> int:
    return int(LAT + size / (GBPS * 2**30 / 1e9))


def reduce_ns(size: int) -> int:
    return 3 * int(size / (LOCAL_MEM * 1e9) * 1e9)


# examples/my_algos.py's simple_ring: 2(n-1) steps of (one hop + E), the first n-1 also reduce
SIMPLE_RING_NS = 2 * (N - 1) * (one_hop_ns(SIZE // N) + E) + (N - 1) * reduce_ns(SIZE // N)


def scenario(tmp: Path, implementation: str, topology: str = "Ring", **extra) -> Path:
    doc = {
        "workload": {"generate": "microbench", "collective": "all_reduce", "size": SIZE, "num_npus": N},
        "system": {"scheduling-policy": "LIFO", "collective-optimization": "baseline", "endpoint-delay": E,
                   "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1, "local-mem-bw": LOCAL_MEM,
                   "all-reduce-implementation": [implementation], "all-gather-implementation": ["ring"],
                   "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"]},
        "network": {"topology": [topology], "npus_count": [N], "bandwidth": [GBPS], "latency": [LAT]},
        **extra,
    }
    path = tmp / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run_cli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SIMPY_ASTRA_CACHE=str(tmp / "cache"))
    return subprocess.run([sys.executable, "-m", "simpy_astra", *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=300)


def finished_cycles(stdout: str) -> set[int]:
    return {int(line.split()[2]) for line in stdout.splitlines() if " finished, " in line}


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "examples" / "my_algos.py", tmp_path / "my_algos.py")
    return tmp_path


def test_an_algorithm_from_a_user_module_runs_from_a_scenario(user_dir: Path) -> None:
    for name in ("my_algos:SIMPLE_RING", "my_algos:simple_ring"):
        r = run_cli(user_dir, "run", str(scenario(user_dir, name)), "--reference-lines", "--quiet")
        assert r.returncode == 0, r.stderr
        assert finished_cycles(r.stdout) == {SIMPLE_RING_NS}


def test_a_plugin_module_registers_a_name(user_dir: Path) -> None:
    (user_dir / "my_plugin.py").write_text(textwrap.dedent("""
        from simpy_astra import collectives
        from my_algos import SIMPLE_RING
        collectives.register("simpleRing", SIMPLE_RING)
    """))
    r = run_cli(user_dir, "run", str(scenario(user_dir, "simpleRing")), "--reference-lines", "--quiet", "--plugin", "my_plugin")
    assert r.returncode == 0, r.stderr
    assert finished_cycles(r.stdout) == {SIMPLE_RING_NS}
    # the same from the scenario's own plugins list
    r = run_cli(user_dir, "run", str(scenario(user_dir, "simpleRing", plugins=["my_plugin"])), "--reference-lines", "--quiet")
    assert r.returncode == 0, r.stderr
    assert finished_cycles(r.stdout) == {SIMPLE_RING_NS}


def test_a_topology_from_a_user_module(user_dir: Path) -> None:
    # a ring whose every message pays two hops of latency: one hop + LAT per ring step
    (user_dir / "my_topo.py").write_text(textwrap.dedent("""
        from simpy_astra.topologies.ring import Ring
        class SlowRing(Ring):
            name = "SlowRing"
            def hops(self, src, dst):
                return 2 * super().hops(src, dst)
    """))
    r = run_cli(user_dir, "run", str(scenario(user_dir, "my_algos:simple_ring", topology="my_topo:SlowRing")),
                "--reference-lines", "--quiet")
    assert r.returncode == 0, r.stderr
    assert finished_cycles(r.stdout) == {SIMPLE_RING_NS + 2 * (N - 1) * int(LAT)}


def test_a_plugin_that_cannot_load_is_one_error_line(user_dir: Path) -> None:
    r = run_cli(user_dir, "run", str(scenario(user_dir, "no_such_module:algo")), "--reference-lines", "--quiet")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "all-reduce-implementation" in r.stderr and "no_such_module" in r.stderr
    r = run_cli(user_dir, "run", str(scenario(user_dir, "ring")), "--reference-lines", "--quiet", "--plugin", "nope_nope")
    assert r.returncode == 2 and "--plugin" in r.stderr and "nope_nope" in r.stderr


def test_entry_points_name_algorithms(tmp_path: Path, user_dir: Path, monkeypatch) -> None:
    # an installed package's entry point, as `pip install` would leave its metadata
    dist = tmp_path / "user_pkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: user-pkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[simpy_astra.collectives]\nsimpleRingEp = my_algos:SIMPLE_RING\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from simpy_astra import plugins
    from simpy_astra.collectives import REGISTRY, resolve

    plugins.forget_entry_points()
    try:
        choice = resolve("simpleRingEp")
        assert choice is not None and choice.algorithm.name == "simple_ring"
    finally:
        REGISTRY.pop("simpleRingEp", None)
        plugins.forget_entry_points()


def test_a_module_is_looked_for_in_the_working_directory_the_installed_packages_then_the_scenarios_folder(
        tmp_path: Path) -> None:
    """The order the docs give (docs/collectives.md and every recipe): a module in the working
    directory wins, then an installed one (a scenario's folder never shadows a package), then
    the one beside the scenario."""
    import os
    import subprocess
    import sys

    folders = {where: tmp_path / where for where in ("cwd", "installed", "scenario")}
    for where, folder in folders.items():
        folder.mkdir()
        (folder / "ordmod_h2.py").write_text(f"WHERE = {where!r}\n")
    probe = ("from simpy_astra.plugins import import_module, search_also; "
             f"search_also({str(folders['scenario'])!r}); print(import_module('ordmod_h2').WHERE)")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(folders["installed"])}
    found = []
    for gone in ("cwd", "installed", "scenario"):
        done = subprocess.run([sys.executable, "-c", probe], cwd=folders["cwd"], env=env, capture_output=True,
                              text=True, timeout=120)
        found.append(done.stdout.strip() or done.stderr.strip().splitlines()[-1])
        (folders[gone] / "ordmod_h2.py").unlink()
    assert found == ["cwd", "installed", "scenario"], found
