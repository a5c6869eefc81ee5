"""Co-simulation example 2: background traffic on a chosen link slows the all-reduce.

    python examples/cosim_background.py

At ``start_ns`` a process puts ``size_bytes`` of background traffic from NPU 0 to NPU 1. The
bytes queue with the collective's messages on link 0->1 (FIFO), so the collective's first
message there waits until the background bytes are serialised.
"""

from __future__ import annotations

from pathlib import Path

from simpy_astra.simulation import Simulation

SCENARIO = Path(__file__).with_name("cosim_ring.yaml")


def background(env, network, src: int, dst: int, size_bytes: int, start_ns: int, done: list):
    if start_ns:
        yield env.timeout(start_ns)
    arrived_ns = yield network.send_background(src, dst, size_bytes)
    done.append(arrived_ns)


def main(size_bytes: int = 1 << 20, start_ns: int = 0,
         scenario: str = str(SCENARIO)) -> tuple[int, int, list]:
    """(finish ns without, finish ns with the background traffic, its arrival time)."""
    quiet = Simulation.from_scenario(scenario).run()
    sim = Simulation.from_scenario(scenario)
    done: list = []
    sim.env.process(background(sim.env, sim.network, 0, 1, size_bytes, start_ns, done))
    loaded = sim.run()
    return max(r.finished_cycles for r in quiet), max(r.finished_cycles for r in loaded), done


if __name__ == "__main__":
    quiet, loaded, done = main()
    print(f"all-reduce: {quiet} ns alone, {loaded} ns with 1 MiB of background traffic on "
          f"link 0->1 (+{loaded - quiet} ns; the background bytes arrived at {done[0]} ns)")
