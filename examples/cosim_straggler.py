"""Co-simulation example 5: a straggler NPU, slowed down or paused, and what it costs the step.

    python examples/cosim_straggler.py

Four NPUs each compute a forward and a weight-gradient pass (10 us each) and then all-reduce
1 MiB (``cosim_straggler.yaml``, congestion-unaware, unfolded: a straggler needs its own
NPU). ``sim.npu(0).slow_down(2.0)`` makes NPU 0 compute twice as slowly; ``pause(5_000,
at_ns=3_000)`` stops its compute for 5 us. The all-reduce cannot finish before NPU 0 joins
it, so the whole step ends as much later as NPU 0's compute was: 20 us and 5 us.
"""

from __future__ import annotations

from pathlib import Path

from simpy_astra.simulation import Simulation

SCENARIO = Path(__file__).with_name("cosim_straggler.yaml")


def finish_ns(straggle: str = "none", scenario: str = str(SCENARIO)) -> int:
    """When the last NPU finished, with NPU 0 slowed ("slow"), paused ("pause") or not."""
    sim = Simulation.from_scenario(scenario)
    if straggle == "slow":
        sim.npu(0).slow_down(2.0)
    elif straggle == "pause":
        sim.npu(0).pause(5_000, at_ns=3_000)
    return max(r.finished_cycles for r in sim.run())


def main(scenario: str = str(SCENARIO)) -> dict[str, int]:
    return {straggle: finish_ns(straggle, scenario) for straggle in ("none", "slow", "pause")}


if __name__ == "__main__":
    times = main()
    print(f"step alone: {times['none']} ns; NPU 0 twice as slow: {times['slow']} ns "
          f"(+{times['slow'] - times['none']}); NPU 0 paused 5 us: {times['pause']} ns "
          f"(+{times['pause'] - times['none']})")
