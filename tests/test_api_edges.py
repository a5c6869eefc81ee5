"""The Python API's edges a user hits first (issue 52): a switch failed by the name ``link()``
takes, a hook that is not callable, a watcher that unwatches itself, and a networkx builder
that catches or raises KeyboardInterrupt.

Counts are derived by hand: a ring all-reduce of one chunk on 4 NPUs sends 2(n-1) = 6
messages per NPU, one hop each, so 24 link_start emissions in all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from simpy_astra.cli.main import EXIT_INPUT_ERROR, main
from simpy_astra.errors import StalledError
from simpy_astra.infra.stopping import EXIT_INTERRUPTED
from simpy_astra.simulation import Simulation
from tests.ctrl_c import sigint_by_default

ROOT = Path(__file__).resolve().parents[1]
STAR = textwrap.dedent('''
    import networkx as nx


    def build():
        g = nx.DiGraph()
        for npu in range(4):
            g.add_edge(npu, "sw", bandwidth_gbps=50, latency_ns=500)
            g.add_edge("sw", npu, bandwidth_gbps=50, latency_ns=500)
        return g


    def raises():
        raise KeyboardInterrupt


    def swallows():
        import sys, time
        while True:  # a builder that catches everything, Ctrl-C included
            try:
                print("READY", file=sys.stderr, flush=True)
                time.sleep(0.05)
            except BaseException:
                pass
''')
SCENARIO = ("workload: {generate: microbench, collective: all_reduce, size: 1048576, num_npus: 4}\n"
            "system: {scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10, "
            "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, all-reduce-implementation: [ring], "
            "all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
            "all-to-all-implementation: [direct]}\n"
            "network: {topology: {networkx: 'star_of_mine:BUILD'}}\nbackend: congestion_aware\n")


def _star(folder: Path, build: str = "build") -> Path:
    sys.modules.pop("star_of_mine", None)
    (folder / "star_of_mine.py").write_text(STAR)
    path = folder / "s.yaml"
    path.write_text(SCENARIO.replace("BUILD", build))
    return path


@pytest.fixture
def star(tmp_path, monkeypatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return _star(tmp_path)


def test_fail_switch_takes_the_name_link_takes(star):
    sim = Simulation.from_scenario(str(star))
    assert sim.network.link(0, "sw").up
    sim.fail_switch("sw")
    assert not any(link.up for link in sim.network.links())  # all 8 links touch the one switch
    with pytest.raises(StalledError, match="which is failed"):
        sim.run()
    with pytest.raises(KeyError, match="no link leads into or out of device 'nowhere'"):
        Simulation.from_scenario(str(star)).fail_switch("nowhere")


def test_a_hook_that_is_not_callable_is_refused_by_on(star):
    sim = Simulation.from_scenario(str(star))
    with pytest.raises(TypeError, match=r"on\('link_start', callback\): callback must be callable.* \(got 42\)"):
        sim.on("link_start", 42)
    with pytest.raises(TypeError, match="fn must be callable"):
        sim.network.link(0, "sw").watch("link_start", None)
    assert sim.network.link(0, "sw").probe_link_start is None  # nothing half-installed on the link


def test_a_watcher_that_unwatches_itself_leaves_the_next_one_its_events(star):
    sim = Simulation.from_scenario(str(star))
    calls: dict[str, int] = {"once": 0, "every": 0}
    links = sim.network.links()

    def once(link, key, size):
        calls["once"] += 1
        link.unwatch("link_start", once)

    def every(link, key, size):
        calls["every"] += 1

    for link in links:
        link.watch("link_start", once)
        link.watch("link_start", every)
    sim.run()
    n = 4  # ring all-reduce over the star: each message crosses 2 links (to the switch, from it)
    assert calls["every"] == 2 * (2 * (n - 1) * n)
    assert calls["once"] == sum(1 for link in links if link.bytes)  # once per link that carried bytes
    assert all(link.probe_link_start == [every] for link in links if link.bytes)


def test_a_builder_that_raises_keyboardinterrupt_is_the_builders_error(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(tmp_path))
    path = _star(tmp_path, "raises")
    code = main(["run", str(path), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_INPUT_ERROR, err
    assert len(err) == 1 and "field 'topology.networkx' function 'star_of_mine:raises' raised " \
                                "KeyboardInterrupt" in err[0], err
    assert "interrupted" not in err[0]


def test_a_builder_that_catches_ctrl_c_does_not_outlive_it(tmp_path):
    """Before: the stop was raised once, inside the builder, which caught it and went on (for
    ever, here). Now the signal comes again a second later and the third ends the process."""
    path = _star(tmp_path, "swallows")
    proc = subprocess.Popen([sys.executable, "-m", "simpy_astra", "run", str(path)], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
                                 "SIMPY_ASTRA_PROGRESS": "0"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_by_default)
    try:
        assert proc.stderr.readline().strip() == "READY"  # the builder runs
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=120)  # a guard against a hang, not a speed check
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [ln for ln in rest.splitlines() if ln.strip() and ln != "READY"]
    assert proc.returncode == EXIT_INTERRUPTED, lines
    assert lines == ["interrupted: stopped by SIGINT (Ctrl-C); files not yet written were not written "
                     "(exit status 130)"]


def test_a_plugin_that_raises_keyboardinterrupt_on_import_is_the_plugins_error(tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("interrupting_plugin", None)
    (tmp_path / "interrupting_plugin.py").write_text("raise KeyboardInterrupt\n")
    path = _star(tmp_path)
    code = main(["run", str(path), "--quiet", "--plugin", "interrupting_plugin"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_INPUT_ERROR, err
    assert err == [f"error: module 'interrupting_plugin' (while imported) raised KeyboardInterrupt: no message "
                   f"(at {tmp_path / 'interrupting_plugin.py'}:1); this is an error in that code, not in "
                   f"simpy-astra: --debug shows its traceback"]
