"""Co-simulation example 3: a fault process halves a link's bandwidth, or takes it down and up.

    python examples/cosim_fault.py

A change acts on every byte not yet on the wire, including the rest of the message being
serialised at that moment.
"""

from __future__ import annotations

from pathlib import Path

from simpy_astra.simulation import Simulation

SCENARIO = Path(__file__).with_name("cosim_ring.yaml")


def halve_bandwidth(env, link, at_ns: int):
    yield env.timeout(at_ns)
    link.set_bandwidth(link.bandwidth_gbps / 2)


def outage(env, link, down_ns: int, up_ns: int):
    yield env.timeout(down_ns)
    link.take_down()
    yield env.timeout(up_ns - down_ns)
    link.bring_up()


def main(fault: str = "halve", scenario: str = str(SCENARIO)) -> int:
    """The all-reduce's finish time with the fault on link 0->1."""
    sim = Simulation.from_scenario(scenario)
    link = sim.network.link(0, 1)
    if fault == "halve":
        sim.env.process(halve_bandwidth(sim.env, link, at_ns=2_000))
    else:
        sim.env.process(outage(sim.env, link, down_ns=2_000, up_ns=12_000))
    return max(r.finished_cycles for r in sim.run())


if __name__ == "__main__":
    quiet = max(r.finished_cycles for r in Simulation.from_scenario(str(SCENARIO)).run())
    print(f"all-reduce alone: {quiet} ns; link 0->1 halved at 2 us: {main('halve')} ns; "
          f"down from 2 us to 12 us: {main('outage')} ns")
