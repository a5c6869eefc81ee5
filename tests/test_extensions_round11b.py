"""A topology of the researcher's own that fails mid-run, told in one line naming what chose it.

docs/collectives.md: a topology class is named as ``module:Class`` in a network's ``topology:``
list, or by a name a plugin module registers; a ``route`` or ``hops`` it answers wrongly
"stops a run that follows it in one line". That line named the class alone (``topology
'r11b:ZeroHops': hops(1, 2) returned 0; ...``), not the scenario that chose it: a sweep of
twenty scenarios left the reader to find which. Now each such error names the scenario file,
the field (``network: field 'topology[0]'``), the class (and, for a registered name, the
class behind it), its file, and the method to fix. (A ``{networkx: ...}`` function's errors
are raised as the scenario is read and named the file and field already.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.researcher_folder import researcher_folder
from tests.test_extensions_round6 import _cli, _write
from tests.test_extensions_round9 import _one_line

HERE = Path(__file__).resolve().parent

R11B = '''
from simpy_astra import topologies
from hypercube import Hypercube


class ZeroHops(Hypercube):
    def hops(self, src, dst):
        return 0


class RaisingHops(Hypercube):
    def hops(self, src, dst):
        return {}[src]


class BrokenInit(Hypercube):
    def __init__(self, npus_count, bandwidth_gbps, latency_ns):
        super().__init__(npus_count, bandwidth_gbps, latency_ns)
        raise ZeroDivisionError("no cube today")


class ShortRoute(Hypercube):
    def route(self, src, dst):
        return [src]


topologies.register("ShortCube", ShortRoute)
'''

SEND = "{generate: microbench, collective: send_recv, size: 65536, num_npus: 8, src: 1, dst: 2}"


@pytest.fixture
def r11b(tmp_path: Path, monkeypatch) -> Path:
    """The researcher's folder: r11b.py and the docs' hypercube.py, the working directory."""
    modules = {"r11b": R11B, "hypercube": (HERE.parent / "examples" / "hypercube.py").read_text()}
    with researcher_folder(tmp_path, monkeypatch, modules) as folder:
        yield folder


def _net(topology: str, n: int = 8) -> str:
    return f"{{topology: ['{topology}'], npus_count: [{n}], bandwidth: [50.0], latency: [500.0]}}"


def _refused(folder: Path, name: str, topology: str, backend: str = "congestion_aware", extra: str = "",
             workload: str = SEND, n: int = 8) -> tuple[Path, str]:
    path = _write(folder, name, workload, _net(topology, n), backend, extra=extra)
    return path, _one_line(_cli(folder, "run", path.name, "--quiet", status=2))


def test_a_wrong_answer_names_the_scenario_field_class_and_method(r11b):
    """hops(1, 2) = 0: before, 'error: topology 'r11b:ZeroHops': hops(1, 2) returned 0; ...'."""
    _, line = _refused(r11b, "zero.yaml", "r11b:ZeroHops")
    assert line == (f"error: zero.yaml: network: field 'topology[0]' (r11b:ZeroHops): hops(1, 2) returned 0; "
                    f"expected an integer >= 1 (links crossed); fix ZeroHops.hops() in {r11b / 'r11b.py'}")


def test_a_method_that_raises_names_the_scenario_field_and_its_line(r11b):
    """Before: 'topology 'r11b:RaisingHops', method hops() raised KeyError: 1 (at ...)', no file."""
    _, line = _refused(r11b, "raising.yaml", "r11b:RaisingHops")
    assert line.startswith("error: raising.yaml: network: field 'topology[0]' (r11b:RaisingHops), method hops() "
                           f"raised KeyError: 1 (at {r11b / 'r11b.py'}:13); this is an error in that code"), line


def test_a_constructor_that_raises_names_the_scenario_and_field(r11b):
    """A ValueError in __init__ is the documented refusal, read with the YAML; another
    exception was 'topology 'r11b:BrokenInit' raised ZeroDivisionError', no file."""
    _, line = _refused(r11b, "init.yaml", "r11b:BrokenInit")
    assert line.startswith("error: init.yaml: network: field 'topology[0]' (r11b:BrokenInit) raised "
                           f"ZeroDivisionError: no cube today (at {r11b / 'r11b.py'}:19)"), line


def test_a_registered_name_names_the_class_behind_it(r11b):
    """``plugins: [r11b]`` registers ShortCube; before, 'topology 'ShortCube': route(0, 1)
    returned [0]', which named neither the scenario nor the class to open."""
    _, line = _refused(r11b, "registered.yaml", "ShortCube", extra="plugins: [r11b]\n")
    assert line == ("error: registered.yaml: network: field 'topology[0]' (ShortCube, r11b:ShortRoute): route(0, 1) "
                    "returned [0]; expected a list of device ids from 0 to 1 (integers: NPUs 0..7, switches "
                    f"numbered from 8); fix ShortRoute.route() in {r11b / 'r11b.py'}")


def test_the_docs_hypercube_on_six_npus_names_the_scenario(r11b):
    """docs/collectives.md: the hypercube copied onto 6 NPUs; ``route(0, 4)`` never leaves NPU
    0 and the run stops naming it, on the analytical backend too: now naming the scenario."""
    send = "{generate: microbench, collective: send_recv, size: 65536, num_npus: 6, src: 0, dst: 4}"
    _, line = _refused(r11b, "cube6.yaml", "hypercube:Hypercube", "congestion_unaware", workload=send, n=6)
    assert line.startswith("error: cube6.yaml: network: field 'topology[0]' (hypercube:Hypercube): route(0, 4) "
                           "returned [0]; "), line
    assert line.endswith(f"; fix Hypercube.route() in {r11b / 'hypercube.py'}"), line


def test_the_python_api_raises_the_same_line(r11b):
    """``Simulation.from_scenario(...).run()``: the PluginError carries the scenario too."""
    from simpy_astra.plugins import PluginError
    from simpy_astra.simulation import Simulation

    path = _write(r11b, "api.yaml", SEND, _net("r11b:ZeroHops"), "congestion_aware")
    with pytest.raises(PluginError, match=r"^.*api\.yaml: network: field 'topology\[0\]' \(r11b:ZeroHops\): hops"):
        Simulation.from_scenario(str(path)).run()
