"""Network cost model: hand-counted prices of a ring, a switch, a 2D mesh and a fat tree, the
``cost:`` override, and the figure in --json-out, the run summary and sweep results."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main as cli_main
from simpy_astra.config import load_network_yaml
from simpy_astra.config.scenario import load_scenario
from simpy_astra.errors import InputError
from simpy_astra.network.cost_model import DEFAULT_PRICES, default_tiers, network_cost

ROOT = Path(__file__).resolve().parents[1]
FAT_TREE = ROOT / "scenarios" / "fat_tree_all_to_all.yaml"


def net(tmp_path: Path, **doc) -> object:
    path = tmp_path / "net.yml"
    path.write_text(yaml.safe_dump(doc))
    return load_network_yaml(path)


def test_ring_costs_one_link_per_npu(tmp_path):
    # 8 NPUs, 8 cables of 50 GB/s; one dimension is a package-level fabric: $4 per GB/s per link
    cost = network_cost(net(tmp_path, topology=["Ring"], npus_count=[8], bandwidth=[50], latency=[500]))
    assert cost.total_usd == 8 * 50 * 4.0 == 1600
    assert cost.lines()[0] == ("[CostModel] Adding (inter-Package, Link) bandwidth: 50, radix: 1, count: 8 "
                               "(added cost: $1600)")


def test_switch_costs_links_nics_and_one_radix_n_switch(tmp_path):
    cost = network_cost(net(tmp_path, topology=["Switch"], npus_count=[8], bandwidth=[100], latency=[500]))
    links = 8 * 100 * 4.0  # a cable per NPU
    switch = 1 * 100 * 8 * 13.0  # $13 per GB/s per port, radix 8
    nics = 8 * 100 * 0.0  # package-level NICs are free in ASTRA-sim's table
    assert cost.total_usd == links + switch + nics == 13600
    assert [(i.kind, i.count, i.radix) for i in cost.items] == [("link", 8, 1), ("switch", 1, 8), ("nic", 8, 1)]


def test_2d_mesh_prices_each_dimension_on_its_tier(tmp_path):
    # [Line, Line] 4x4: each dimension has 4 lines of 3 links; dimension 1 is the pod level ($7.4)
    cost = network_cost(net(tmp_path, topology=["Line", "Line"], npus_count=[4, 4], bandwidth=[50, 25],
                            latency=[500, 500]))
    assert cost.tiers == ("package", "pod")
    assert [(i.dim, i.count) for i in cost.items] == [(0, 12), (1, 12)]
    assert cost.total_usd == pytest.approx(12 * 50 * 4.0 + 12 * 25 * 7.4)  # 2400 + 2220


def test_fat_tree_graph_counts_cables_switch_ports_and_nics():
    # 16 NPU-leaf cables + 8 leaf-spine cables; leaves have 4 + 2 ports, spines 4; 16 NICs
    cost = network_cost(load_scenario(str(FAT_TREE)).network)
    assert cost.total_usd == 24 * 100 * 4.0 + (4 * 6 + 2 * 4) * 100 * 13.0 + 16 * 100 * 0.0 == 51200
    switches = sorted((i.radix, i.count) for i in cost.items if i.kind == "switch")
    assert switches == [(4, 2), (6, 4)]
    assert sum(i.count for i in cost.items if i.kind == "nic") == 16


def test_cost_block_overrides_tiers_and_prices(tmp_path):
    network = net(tmp_path, topology=["Switch"], npus_count=[8], bandwidth=[100], latency=[500],
                  cost={"tiers": ["pod"], "switch": 1.0, "link": {"pod": 2.0}})
    cost = network_cost(network)
    # pod NICs keep the default $47.8 per GB/s
    assert cost.total_usd == pytest.approx(8 * 100 * 2.0 + 100 * 8 * 1.0 + 8 * 100 * DEFAULT_PRICES["nic"]["pod"])


def test_scenario_cost_block_wins_over_the_network_files(tmp_path):
    doc = yaml.safe_load(FAT_TREE.read_text())
    doc["workload"] = str(FAT_TREE.parent / doc["workload"])
    doc["cost"] = {"switch": 0, "link": 1}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert network_cost(load_scenario(str(path)).network).total_usd == 24 * 100 * 1.0


@pytest.mark.parametrize("block, where", [
    ({"tiers": ["node", "pod"]}, "cost.tiers"),  # one dimension, two tiers
    ({"link": {"rack": 3}}, "cost.link.rack"),
    ({"nic": -1}, "cost.nic"),
    ({"price": 1}, "cost"),
])
def test_bad_cost_blocks_name_the_field(tmp_path, block, where):
    with pytest.raises(InputError, match=f"'{where}'"):
        net(tmp_path, topology=["Ring"], npus_count=[8], bandwidth=[50], latency=[500], cost=block)


def test_tile_switch_has_no_default_price_so_no_total(tmp_path):
    assert default_tiers(4) == ("tile", "package", "node", "pod")
    network = net(tmp_path, topology=["Switch", "Ring", "Ring", "Ring"], npus_count=[2, 2, 2, 2],
                  bandwidth=[50] * 4, latency=[500] * 4)
    cost = network_cost(network)
    assert cost.total_usd is None and "cost.switch.tile" in cost.error
    priced = net(tmp_path, topology=["Switch", "Ring", "Ring", "Ring"], npus_count=[2, 2, 2, 2],
                 bandwidth=[50] * 4, latency=[500] * 4, cost={"switch": {"tile": 1}, "nic": {"tile": 0}})
    assert network_cost(priced).total_usd is not None


def test_json_out_and_summary_report_the_cost(tmp_path, capsys):
    out = tmp_path / "f.json"
    assert cli_main(["run", str(ROOT / "scenarios" / "default.yaml"), "--json-out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["cost_usd"] == 8 * 50 * 4.0  # the default scenario: ring of 8 at 50 GB/s
    assert data["cost"]["items"][0]["count"] == 8
    assert "network cost: $1,600" in capsys.readouterr().err.splitlines()


def test_sweep_results_have_cost_usd_and_best_under_budget(tmp_path):
    pytest.importorskip("simpleeval")
    from simpy_astra.cli.sweep import main as sweep_main

    sweep = ROOT / "scenarios" / "sweeps" / "cost_topology.yaml"
    out = tmp_path / "out"
    assert sweep_main([str(sweep), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 20 and all(r["status"] == "ok" for r in rows)
    cost = {(r["fabric"], r["network.bandwidth"]): float(r["cost_usd"]) for r in rows}
    assert cost[("ring", "100")] == 6400 and cost[("fat_tree", "100")] == 51200
    best = json.loads((out / "best.json").read_text())
    under = best["best_under"]["cost_usd <= 10000"]
    assert under["figures"]["cost_usd"] <= 10000
    fits = [r for r in rows if float(r["cost_usd"]) <= 10000]
    assert under["objective"] == min(int(r["finish_ns"]) * float(r["cost_usd"]) for r in fits)
    committed = json.loads((ROOT / "scenarios" / "sweeps" / "results" / "cost_topology" / "best.json").read_text())
    assert committed["best"]["coordinates"] == best["best"]["coordinates"]
    assert committed["best_under"]["cost_usd <= 10000"]["coordinates"] == under["coordinates"]
    # docs/reports.md's table of the 25 GB/s points is what the sweep gives
    names = {"fully connected": "fully_connected", "ring": "ring", "4x4 torus": "torus4x4",
             "single switch (halving-doubling)": "switch", "fat tree, 2:1 oversubscribed": "fat_tree"}
    page = (ROOT / "docs" / "reports.md").read_text()
    table = [line.split(" | ") for line in page[page.index("| fabric (25 GB/s links)"):].splitlines()[2:7]]
    at_25 = {r["fabric"]: (int(r["finish_ns"]), float(r["cost_usd"])) for r in rows if r["network.bandwidth"] == "25"}
    for fabric, finish_us, cost_usd, product in table:
        ns, usd = at_25[names[fabric.strip("| ")]]
        mantissa, _, exponent = f"{ns * usd:.2e}".partition("e")
        assert [finish_us, cost_usd, product.strip(" |")] == [f"{ns / 1e3:,.1f}", f"{usd:,.0f}",
                                                              f"{mantissa}e{int(exponent)}"], fabric


def test_sweep_folder_from_before_cost_usd_resumes(tmp_path):
    pytest.importorskip("simpleeval")
    from simpy_astra.sweep.spec import load_sweep
    from simpy_astra.sweep.store import ResultsStore

    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(ROOT / "scenarios" / "default.yaml"),
                                     "axes": {"network.bandwidth": [50]}}))
    spec = load_sweep(str(sweep))
    out = tmp_path / "out"
    store = ResultsStore(str(out), spec)
    store.close()
    manifest = json.loads((out / "sweep.json").read_text())
    old_columns = [c for c in manifest["columns"] if c != "cost_usd"]
    manifest["columns"] = old_columns
    (out / "sweep.json").write_text(json.dumps(manifest))
    known = {"key": "k1", "network.bandwidth": "50", "finish_ns": "1", "wall_s": "0.1", "status": "ok"}
    row = [known.get(c, "") for c in old_columns]
    (out / "results.csv").write_text(",".join(old_columns) + "\n" + ",".join(row) + "\n")
    store = ResultsStore(str(out), spec)  # no "different sweep" refusal
    store.close()
    assert store.rows["k1"].get("cost_usd", "") == ""
    assert "cost_usd" in (out / "results.csv").read_text().splitlines()[0].split(",")


def test_unused_prices_are_found_in_the_parsed_block_alone():
    """Which prices a network's tiers never read is answered from the parsed block (the kinds
    priced tier by tier), not by reading the raw mapping a second time; a price given as one
    number for every tier is not one of them, and a block parsed alike compares alike."""
    from simpy_astra.network.cost_model import CostPrices

    given = CostPrices.parse({"link": {"pod": 10.0, "package": 5.0, "node": 1}, "switch": 20.0})
    assert given.unused(("package",), "s.yaml") == [
        f"s.yaml: cost.link.{tier} prices the {tier} tier, which no dimension of the network is on (its tiers: "
        f"package), so it is unused; name it in cost.tiers or remove it" for tier in ("pod", "node")]
    assert CostPrices.parse({"link": 4.0}) == CostPrices.parse({"link": dict.fromkeys(DEFAULT_PRICES["link"], 4.0)})
