"""A report of one's own (docs/reports.md, "A report of your own"): the all-reduce's bus
bandwidth, 2(n-1)/n x S / T (nccl-tests' figure), and the busiest link's utilisation."""

import sys

from simpy_astra.simulation import Simulation


def bus_bandwidth_report(scenario: str, size_bytes: int) -> str:
    sim = Simulation.from_scenario(scenario)
    reports = sim.run()
    n = len(reports)
    t_ns = max(r.finished_ns for r in reports)
    busbw_gb_s = 2 * (n - 1) / n * size_bytes / t_ns  # bytes per ns = GB/s (10^9 B/s)
    line = f"{n} NPUs, {size_bytes:,} B all-reduce in {t_ns:,} ns: bus bandwidth {busbw_gb_s:.2f} GB/s"
    if sim.network.has_links:
        busiest = max(sim.network.links(), key=lambda link: link.busy_ns)
        ends = "->".join(str(sim.network.label(end)) for end in (busiest.src, busiest.dst))  # as reports name them
        line += f"; busiest link {ends} busy {busiest.busy_ns / t_ns:.0%} of the time"
    return line


if __name__ == "__main__":  # python examples/report_busbw.py [SCENARIO BYTES]
    scenario, size = sys.argv[1:3] if len(sys.argv) > 2 else ("examples/cosim_ring.yaml", 1048576)
    print(bus_bandwidth_report(scenario, int(size)))
