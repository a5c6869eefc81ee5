"""What the packet backend's rate solver costs: the packet all-to-all point of the
mesh_backends sweep, alone, optionally alternating with another tree to check that both
print the same figures.

    python benchmarks/packet_solver.py [--size BYTES] [--repeat 2] [--against TREE]

The point is ``scenarios/mesh_backends.yaml`` (a 4x4 mesh, 16 NPUs) with the sweep's
``all_to_all`` collective on the packet backend: about 200 trains share every link, so
each event re-shares them all (28,469 solves at the default 24 MiB). Each run is a fresh
``python -m simpy_astra run`` (the tree's own ``.venv`` if it has one), measured in wall
and user seconds. ``--against TREE`` (e.g. a git worktree of main) runs that tree's
package before this one's, ``--repeat`` times, and compares their stdout, stderr and
``--json-out`` byte for byte (the lines and fields that report the simulator's own time
and memory, and the hash in the workload cache folder's name, aside): an optimisation of
the solver must not move a figure. No assertion: this measures (exit 1 only if the
figures differ).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parents[1]
BASE = HERE / "scenarios" / "mesh_backends.yaml"
#: what reports the simulator's own cost, not a simulated figure
OWN_COST_LINE = re.compile(r"simulated in [0-9.]+ s")
OWN_COST_FIELDS = ("simulator_wall_s", "peak_rss_mb")
#: the generated workload's cache folder: its key is the generator's, which a tree may name
#: otherwise (the same traces under another hash)
CACHE_KEY = re.compile(r"(/workloads/[A-Za-z0-9_]+-)[0-9a-f]+/")


def scenario(folder: Path, size: int) -> Path:
    """The sweep's packet all-to-all point as a scenario file in ``folder``."""
    doc = yaml.safe_load(BASE.read_text())
    doc["name"] = "mesh_backends_packet_all_to_all"
    doc["workload"] = dict(doc["workload"], collective="all_to_all", size=size)
    doc["backend"] = "packet"
    path = folder / "point.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def python_of(tree: Path) -> str:
    venv = tree / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run(tree: Path, point: Path, folder: Path) -> tuple[float, float, str]:
    """(wall s, user s, the figures it printed and wrote) of one run of ``tree``'s package."""
    out = folder / "out.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    t0 = time.perf_counter()
    done = subprocess.run([python_of(tree), "-m", "simpy_astra", "run", str(point), "--json-out", str(out)],
                          cwd=tree, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    user = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
    if done.returncode:
        sys.exit(f"{tree}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    figures = json.loads(out.read_text())
    for field in OWN_COST_FIELDS:
        figures.pop(field, None)
    written = CACHE_KEY.sub(r"\1KEY/", json.dumps(figures, sort_keys=True))
    text = done.stdout + OWN_COST_LINE.sub("simulated in X s", done.stderr) + written
    return wall, user, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=25165824, help="all-to-all bytes per NPU (default 24 MiB)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--against", type=Path, help="another tree to alternate with (run first) and compare")
    a = ap.parse_args()
    trees = ([a.against.resolve()] if a.against else []) + [HERE]
    figures: dict[Path, set[str]] = {tree: set() for tree in trees}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        point = scenario(folder, a.size)
        print(f"{'tree':40s} {'wall s':>8s} {'user s':>8s}")
        for _ in range(a.repeat):
            for tree in trees:
                wall, user, text = run(tree, point, folder)
                figures[tree].add(text)
                print(f"{str(tree)[-40:]:40s} {wall:8.2f} {user:8.2f}", flush=True)
    if a.against:
        same = len(figures[trees[0]] | figures[trees[1]]) == 1
        print("figures: byte-identical" if same else "figures: DIFFER")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
