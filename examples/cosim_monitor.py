"""Co-simulation example 1: a monitor process samples a link's utilisation every microsecond.

    python examples/cosim_monitor.py

The monitor is an ordinary SimPy process on the simulation's environment. It loops forever;
``sim.run()`` still ends when every NPU has finished.
"""

from __future__ import annotations

from pathlib import Path

from simpy_astra.simulation import Simulation

SCENARIO = Path(__file__).with_name("cosim_ring.yaml")


def monitor(env, link, samples: list[float], period_ns: int = 1000):
    """Append the link's busy time in each ``period_ns`` window to ``samples``, forever."""
    last = link.busy_ns
    while True:
        yield env.timeout(period_ns)
        busy = link.busy_ns
        samples.append(busy - last)
        last = busy


def main(scenario: str = str(SCENARIO)) -> tuple[list[float], Simulation]:
    sim = Simulation.from_scenario(scenario)
    link = sim.network.link(0, 1)
    samples: list[float] = []
    sim.env.process(monitor(sim.env, link, samples))
    sim.run()
    # the last window is cut short by the end of the run: sample it too
    samples.append(link.busy_ns - sum(samples))
    return samples, sim


if __name__ == "__main__":
    samples, sim = main()
    link = sim.network.link(0, 1)
    print(f"link 0->1: {link.bytes} bytes, busy {link.busy_ns} ns of {sim.env.now} ns")
    print("utilisation per us:", " ".join(f"{s / 1000:.2f}" for s in samples))
