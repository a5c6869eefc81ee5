"""Co-simulation example 4: a link fails and never comes back; the run ends with a report.

    python examples/cosim_link_failure.py

Link 0->1 is taken down at 2 us, in the middle of the ring all-reduce's first message, and
never brought up, while a monitor process loops forever. The NPUs can never finish, yet
``sim.run()`` ends: the stall watchdog (always running) finds that nothing of the model can
move any more, and the run raises :class:`~simpy_astra.errors.StalledError`, whose one line
names the link, the message it holds, the collective phase that sent it and the one waiting
for it. The same works on the packet backend (``Simulation.from_scenario(path, backend="packet")``).
"""

from __future__ import annotations

from pathlib import Path

from simpy_astra.errors import StalledError
from simpy_astra.simulation import Simulation

SCENARIO = Path(__file__).with_name("cosim_ring.yaml")


def fail_link(env, link, at_ns: int):
    yield env.timeout(at_ns)
    link.take_down()  # and never bring_up()


def heartbeat(env, beats: list[float], period_ns: int = 1_000):
    """A user process that never ends (it would keep a plain ``env.run()`` going forever)."""
    while True:
        beats.append(env.now)
        yield env.timeout(period_ns)


def main(scenario: str = str(SCENARIO), backend: str | None = None) -> tuple[str, Simulation]:
    """(the stall report, the simulation) of the run with link 0->1 failed at 2 us."""
    sim = Simulation.from_scenario(scenario, backend)
    sim.env.process(fail_link(sim.env, sim.network.link(0, 1), at_ns=2_000))
    sim.env.process(heartbeat(sim.env, []))
    try:
        sim.run()
    except StalledError as stall:
        return str(stall), sim
    raise AssertionError("the run finished although link 0->1 never came back")


if __name__ == "__main__":
    report, sim = main()
    print(f"stopped at {sim.env.now} ns:\n{report}")
