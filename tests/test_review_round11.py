"""Review of extensions round 11 (h2): inputs around each rule it added.

- the switch-model warning named the YAML field ``switch-model`` for a model handed in from
  Python (``switch_model=``), which the scenario does not have: the very misnaming ceac08e
  removed from the refusal beside another backend;
- ``fail_switch`` refused ``0`` but not numpy's ``0`` or ``0.0``, which the links match as they
  match ``0``: NPU 0's links failed in silence, as before the rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_extensions_round6 import _write
from tests.test_extensions_round7 import _net
from tests.test_extensions_round11 import HERE, r11  # noqa: F401 - the researcher's folder

SEND = "{generate: microbench, collective: send_recv, size: 65536, num_npus: 4, src: 0, dst: 1}"


def _switch_lines(sim) -> list[str]:
    return [w for w in sim.warnings if "changes nothing" in w]


def test_the_switchless_warning_names_the_keyword_a_python_model_came_by(r11):  # noqa: F811
    """From Python the line names ``switch_model=``; from the YAML, the file and its field,
    also when Python hands in only a link model beside the YAML's switch model."""
    from paced_link import PacedLink
    from slow_switch import SlowSwitch

    from simpy_astra.simulation import Simulation

    tail = ("(slow_switch:SlowSwitch) changes nothing: the topology [Ring] has no switch for it to serve "
            "(a Switch dimension has one, and so does a Graph that names switches); leave it out, or give the "
            "network a switch")
    path = _write(r11, "ring.yaml", SEND, _net("Ring", 4), "congestion_aware")
    sim = Simulation.from_scenario(str(path), switch_model=SlowSwitch)
    assert _switch_lines(sim) == [f"switch_model= {tail}"]
    yaml_model = _write(r11, "ring_yaml.yaml", SEND,
                        _net("Ring", 4, extra=", switch-model: {class: 'slow_switch:SlowSwitch'}"), "congestion_aware")
    sim = Simulation.from_scenario(str(yaml_model), link_model=PacedLink, link_params={"gap_ns": 0})
    assert _switch_lines(sim) == [f"{yaml_model}: network: field 'switch-model' {tail}"]


@pytest.mark.parametrize("device", [np.int64(0), 0.0, np.int32(3)])
def test_fail_switch_refuses_an_npu_id_of_any_number_type(r11, device):  # noqa: F811
    """The links match ``np.int64(0)`` and ``0.0`` as ``0``: refused as ``0`` is."""
    from simpy_astra.simulation import Simulation

    scenario = r11 / "star.yaml"
    scenario.write_text((HERE.parent / "examples" / "star_send.yaml").read_text()
                        .replace("backend: congestion_unaware", "backend: congestion_aware"))
    sim = Simulation.from_scenario(str(scenario))

    def fault(env):
        yield env.timeout(100)
        sim.fail_switch(device)

    sim.env.process(fault(sim.env))
    with pytest.raises(ValueError, match=rf"^fail_switch\({device}\): device {device} is an NPU \(NPUs 0\.\.3\)"):
        sim.run()


def test_a_plugin_backend_that_drops_a_python_model_names_the_keyword(r11, monkeypatch):  # noqa: F811
    """A plug-in backend (``reads_element_models`` not declared) whose network ignores its
    ``config`` is refused a model as before, but a model handed in from Python was named as
    the YAML field ``cosim.yaml: network: field 'link-model'``; now as ``link_model=``. The
    YAML's own key keeps its file and field."""
    from paced_link import PacedLink

    from simpy_astra.errors import InputError
    from simpy_astra.network.backends import BACKENDS, BackendSpec, register
    from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
    from simpy_astra.simulation import Simulation

    monkeypatch.setitem(BACKENDS, "plain_own", None)  # the registry left as it was found
    BACKENDS.pop("plain_own")
    register(BackendSpec("plain_own", "analytical, a network of one's own",
                         lambda env, dims, source, config=None: CongestionUnawareNetwork(env, dims),
                         folds="pairs", folded=None))
    tail = ("is not read by the plain_own backend (its build does not hand 'paced_link:PacedLink' to its "
            "links); link and switch models replace the congestion_aware backend's: run on congestion_aware, "
            "or leave it out")
    scenario = r11 / "cosim.yaml"
    scenario.write_text((HERE.parent / "examples" / "cosim_ring.yaml").read_text())
    with pytest.raises(InputError) as refused:
        Simulation.from_scenario(str(scenario), backend="plain_own", link_model=PacedLink)
    assert str(refused.value) == f"link_model= {tail}"
    yaml_model = _write(r11, "ring_yaml.yaml", SEND,
                        _net("Ring", 4, extra=", link-model: {class: 'paced_link:PacedLink'}"), "plain_own")
    with pytest.raises(InputError) as refused:
        Simulation.from_scenario(str(yaml_model))
    assert str(refused.value) == f"{yaml_model}: network: field 'link-model' {tail}"


def test_a_backend_of_faults_without_links_is_not_told_to_call_an_init_it_lacks(r11, monkeypatch):  # noqa: F811
    """simpy_astra/network/README.md names ``faults.WithoutLinks`` for a backend without links;
    it has no ``__init__`` that sets ``send`` or ``board``, so a network built on it alone that
    lacks them was told to call ``super().__init__(env, dims)``, which sets nothing (and
    object's takes no arguments). It is told to return a Network; a CongestionUnawareNetwork
    subclass that skips the base's ``__init__`` is still told to call it (round 11's test)."""
    from simpy_astra.network.backends import BACKENDS, BackendSpec, register
    from simpy_astra.network.faults import WithoutLinks
    from simpy_astra.plugins import PluginError
    from simpy_astra.simulation import Simulation

    class Closed(WithoutLinks):
        name = "closed"

        def __init__(self, env, dims):
            self.env = env

    monkeypatch.setitem(BACKENDS, "closed", None)  # the registry left as it was found
    BACKENDS.pop("closed")
    register(BackendSpec("closed", "closed forms of one's own", lambda env, dims, source, config=None: Closed(env, dims),
                         folds=None, folded=None))
    scenario = r11 / "cosim.yaml"
    scenario.write_text((HERE.parent / "examples" / "cosim_ring.yaml").read_text())
    with pytest.raises(PluginError) as refused:
        Simulation.from_scenario(str(scenario), backend="closed")
    assert str(refused.value) == ("network backend 'closed': build returned Closed, which has no send, recv, board, "
                                  "...; return a simpy_astra.network.Network (e.g. a CongestionUnawareNetwork "
                                  "subclass, docs/backends.md)")
