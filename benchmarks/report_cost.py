"""What a run's reports cost: the time after the simulation (tables, terminal timeline,
``--plots``) against the simulation's own time, on large Megatron steps.

Issue 51: the reports must cost at most 5% of the simulation at any scale. Each case runs
``run SCENARIO --plots DIR`` in a fresh process (stdout to /dev/null, stderr to a pipe: the
plain-text tables) with ``Simulation.run`` timed from inside; "after" is from its return to
the command's end. Wall and CPU seconds (``time.process_time``) are both given: the CPU ratio is the steadier
on a shared machine. ``--tree PATH`` runs another checkout's code with the same driver (e.g.
``git worktree add --detach /tmp/base main``), so both are measured in one sitting (load
varies a lot on a shared machine).

    python benchmarks/report_cost.py [--cases gpt3-1024,sc21-3072] [--tree PATH] [--repeat N]
        [--flags "--json-out @figures.json"]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

#: name -> (cluster preset, GPUs, Megatron arguments)
CASES = {
    # GPT-3 175B on 1,024 A100s: tp8 x pp16 x dp8, 192 micro-batches per replica
    "gpt3-1024": ("dgx-a100-80gb", 1024,
                  "--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
                  "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 1536 "
                  "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --bf16 "
                  "--sequence-parallel --use-distributed-optimizer --use-flash-attn --vocab-size 51200"),
    # SC'21 Table 1's last row (1T parameters, ../shared/realtables/SC21_TABLE1.md)
    "sc21-3072": ("dgx-a100-80gb", 3072,
                  "--num-layers 128 --hidden-size 25600 --num-attention-heads 160 --seq-length 2048 "
                  "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 3072 "
                  "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 64 --fp16 "
                  "--checkpoint-activations --DDP-impl local --vocab-size 51200"),
    # Llama-3-405B's shape on 16,384 H100s (128 layers, so pp 16 divides them): tp8 x pp16 x dp128,
    # folded to 16 simulated NPUs, whose reports are every NPU's
    "llama405-16384": ("dgx-h100", 16384,
                       "--num-layers 128 --hidden-size 16384 --ffn-hidden-size 53248 --num-attention-heads 128 "
                       "--group-query-attention --num-query-groups 8 --seq-length 8192 "
                       "--max-position-embeddings 8192 --micro-batch-size 1 --global-batch-size 2048 "
                       "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --bf16 --swiglu "
                       "--normalization RMSNorm --untie-embeddings-and-output-weights "
                       "--position-embedding-type rope --vocab-size 128256 --use-distributed-optimizer"),
}

#: runs in the child: ``TREE`` first on the path (no editable install's finder in the way),
#: Simulation.run timed, then the command line as a user types it, with the garbage collector
#: as ``python -m simpy_astra`` leaves it (simpy_astra/__main__.py pauses it; the run resumes it
#: for itself): with it running, the reports' allocations rescan the simulation's millions of
#: objects, a cost the command does not have
DRIVER = r"""
import gc, json, sys, time
gc.disable()
tree, out, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
if tree:
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, tree)
    import importlib.util, os, simpy_astra
    for name in ("collectives", "topologies", "workloads"):  # setup.cfg's package_dir, by hand
        folder = os.path.join(tree, name)
        spec = importlib.util.spec_from_file_location(f"simpy_astra.{name}", os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])
        module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        setattr(simpy_astra, name, module)
from simpy_astra import simulation
from simpy_astra.cli.main import main
marks = {}
run = simulation.Simulation.run
def timed(self, *a, **k):
    marks["start"], marks["start_cpu"] = time.perf_counter(), time.process_time()
    try:
        return run(self, *a, **k)
    finally:
        marks["end"], marks["end_cpu"] = time.perf_counter(), time.process_time()
simulation.Simulation.run = timed
code = main(argv)
done, done_cpu = time.perf_counter(), time.process_time()
json.dump({"code": code, "sim_s": marks["end"] - marks["start"], "after_s": done - marks["end"],
           "sim_cpu_s": marks["end_cpu"] - marks["start_cpu"], "after_cpu_s": done_cpu - marks["end_cpu"]}, open(out, "w"))
"""


def measure(case: str, tree: str, folder: str, flags: list[str]) -> dict:
    preset, gpus, args = CASES[case]
    scenario = os.path.join(folder, f"{case}.yaml")
    with open(scenario, "w") as f:
        f.write(f'workload:\n  generate: megatron\n  args: "{args}"\ncluster:\n  preset: {preset}\n  gpus: {gpus}\n')
    out = os.path.join(folder, f"{case}-{abs(hash(tree))}.json")
    env = {**os.environ, "SIMPY_ASTRA_PROGRESS": "0", "SIMPY_ASTRA_CACHE": os.path.join(folder, "cache")}
    flags = [os.path.join(folder, f[1:]) if f.startswith("@") else f for f in flags]
    done = subprocess.run([sys.executable, "-c", DRIVER, tree, out, "run", scenario, *flags],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if done.returncode or not os.path.exists(out):
        raise SystemExit(f"{case}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    result = json.load(open(out))
    if result["code"]:  # the command failed (its reports cut short): no figure to compare
        raise SystemExit(f"{case}: the command returned {result['code']}: {done.stderr.strip()[-500:]}")
    return result


def _line(case: str, label: str, runs: list[dict]) -> str:
    """The case's wall figures and CPU ratio (medians over ``runs``): on a shared machine the
    CPU times vary less than the wall times, which other work stretches."""
    def median(key):
        return statistics.median(r[key] for r in runs)

    wall = statistics.median(r["after_s"] / r["sim_s"] for r in runs)
    cpu = statistics.median(r["after_cpu_s"] / r["sim_cpu_s"] for r in runs)
    return (f"{case:<10} {label:<8} {median('sim_s'):>8.2f} {median('after_s'):>7.2f} {100 * wall:>7.1f}% "
            f"{median('sim_cpu_s'):>8.2f} {median('after_cpu_s'):>7.2f} {100 * cpu:>7.1f}%")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--tree", default=None, help="also measure this checkout's code (e.g. main's)")
    ap.add_argument("--flags", default="--plots @plots",
                    help="run's flags, space-separated; @NAME is a path in the scratch folder "
                         "(default: --plots @plots; '' for the plain summary)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per case and code, the codes alternating; then each one's median")
    a = ap.parse_args()
    trees = [("this", "")] + ([("tree", os.path.abspath(a.tree))] if a.tree else [])
    print(f"{'':<19} {'wall: sim (s)':>13} {'after':>7} {'ratio':>8} {'CPU: sim (s)':>12} {'after':>7} {'ratio':>8}")
    print(f"{'case':<10} {'code':<8}")
    with tempfile.TemporaryDirectory(prefix="report-cost-") as folder:
        for case in a.cases.split(","):
            runs: dict[str, list[dict]] = {label: [] for label, _tree in trees}
            for _ in range(a.repeat):
                for label, tree in trees:
                    r = measure(case, tree, folder, a.flags.split())
                    runs[label].append(r)
                    print(_line(case, label, [r]), flush=True)
            if a.repeat > 1:
                for label, rs in runs.items():
                    print(_line(case, f"{label}-med", rs), flush=True)


if __name__ == "__main__":
    main()
