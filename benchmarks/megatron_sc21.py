"""Megatron-LM's SC'21 weak-scaling table (../shared/realtables/SC21_TABLE1.md), predicted.

Each row runs as a user would run it: a scenario of ``workload: {generate: megatron, args}``
and ``cluster: {preset: dgx-a100-80gb, gpus, inter_node_gbit_s: 1600}`` and nothing else, through
``python -m simpy_astra run FILE --json-out OUT --quiet``. Prints published against predicted
seconds per iteration and TFLOP/s per GPU, the error per row, the mean |error| and the
Spearman rank correlation of the TFLOP/s trend.

    python benchmarks/megatron_sc21.py [--table PATH] [--rows 1,2,3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TABLE = os.path.join(HERE, "..", "..", "shared", "realtables", "SC21_TABLE1.md")


def read_table(path: str) -> list[dict]:
    """The ten rows: model, GPUs, published TFLOP/s and implied s/iter, and the scenario args."""
    text = open(path, encoding="utf-8").read()
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 18 and re.fullmatch(r"[\d.]+B", cells[0]):
            rows.append({"model": cells[0], "gpus": int(cells[8].split()[0].replace(",", "")),
                         "tflops": float(cells[14]), "seconds": float(cells[17])})
    section = text.split("`args` for every row", 1)[1]
    block = section.split("```", 2)[1]
    args = [a.strip() for a in block.strip().splitlines() if a.strip()]
    if len(args) != len(rows):
        raise SystemExit(f"{path}: {len(rows)} table rows but {len(args)} argument lines")
    for row, a in zip(rows, args, strict=True):
        row["args"] = a
    return rows


def h100_row(model: str, gpus: int, global_batch: int, seq: int, tokens_per_s: float, tflops: float,
             args: str) -> dict:
    """A published DGX H100 row that gives tokens/s per GPU: its seconds per step are
    ``global batch x sequence / (tokens/s per GPU x GPUs)``."""
    return {"model": model, "gpus": gpus, "seconds": global_batch * seq / (tokens_per_s * gpus),
            "tflops": float(tflops), "preset": "dgx-h100", "inter_node_gbit_s": 3200, "args": args}


def gpt_step_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Megatron's model FLOPs of a GPT step with a 4h FFN, recomputation not counted:
    ``72 B s l h^2 (1 + s/6h + V/12lh)`` (what published MFU and TFLOP/s figures divide)."""
    return 72 * batch * seq * layers * hidden ** 2 * (1 + seq / (6 * hidden) + vocab / (12 * layers * hidden))


def predict(row: dict, folder: str, gpu: dict | None = None) -> tuple[dict, float]:
    """Run one row as a scenario (``gpu``: GPU figures overriding the preset's; the row's
    ``preset`` and ``inter_node_gbit_s`` default to SC'21's DGX A100 and 1,600 Gbit/s, its
    ``schedule``, if any, is the workload's pipeline schedule, its ``cluster``, if any, more
    cluster fields over the preset's)."""
    scenario = os.path.join(folder, f"{row['model']}.yaml")
    out = os.path.join(folder, f"{row['model']}.json")
    with open(scenario, "w") as f:
        f.write(f'workload:\n  generate: megatron\n  args: "{row["args"]}"\n')
        if row.get("schedule"):
            f.write(f"  schedule: {row['schedule']}\n")
        f.write(f"cluster:\n  preset: {row.get('preset', 'dgx-a100-80gb')}\n  gpus: {row['gpus']}\n"
                f"  inter_node_gbit_s: {row.get('inter_node_gbit_s', 1600)}\n")
        for key, value in row.get("cluster", {}).items():  # more of the node's fields, over the preset's
            f.write(f"  {key}: {value}\n")
        if gpu:
            f.write(f"  gpu: {json.dumps(gpu)}\n")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", scenario, "--json-out", out, "--quiet"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"{row['model']}: exit {done.returncode}: {done.stderr.strip()}")
    wall = time.perf_counter() - start
    with open(out) as f:
        return json.load(f), wall


def spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        r = [0.0] * len(v)
        for i, j in enumerate(order):
            r[j] = float(i)
        return r

    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    d2 = sum((a - b) ** 2 for a, b in zip(rx, ry, strict=True))
    return 1 - 6 * d2 / (n * (n * n - 1)) if n > 1 else 1.0


def score(rows: list[dict], json_path: str | None = None) -> float:
    """Run ``rows``, print each against its published time and return the mean |error|. Each
    row also shows the predicted memory per GPU (``mem GiB``, ``!`` past the GPU's capacity):
    every published row ran, so a row that does not fit is a memory model's error."""
    results = []
    w = max(8, *(len(r["model"]) for r in rows))
    print(f"{'model':>{w}} {'GPUs':>5} {'pub s':>7} {'sim s':>7} {'error':>7} {'pub TF':>6} {'sim TF':>6} "
          f"{'MFU':>5} {'mem GiB':>7} {'wall s':>6}")
    with tempfile.TemporaryDirectory() as folder:
        for row in rows:
            data, wall = predict(row, folder)
            t = data["iteration_time_ns"] / 1e9
            err = t / row["seconds"] - 1
            tf = data["training"]["tflops_per_gpu"]
            memory, fits = data["training"]["memory_per_gpu_gib"], bool(data["training"]["fits"])
            results.append({**row, "predicted_s": t, "error": err, "predicted_tflops": tf, "wall_s": wall,
                            "memory_gib": memory, "fits": fits})
            print(f"{row['model']:>{w}} {row['gpus']:>5} {row['seconds']:>7.3f} {t:>7.3f} {err:>+7.1%} "
                  f"{row['tflops']:>6.0f} {tf:>6.1f} {data['training']['mfu']:>5.1%} "
                  f"{memory:>6.1f}{' ' if fits else '!'} {wall:>6.1f}", flush=True)
    errors = [abs(r["error"]) for r in results]
    rho = spearman([r["tflops"] for r in results], [r["predicted_tflops"] for r in results])
    mean = sum(errors) / len(errors)
    print(f"mean |error| {mean:.1%}, worst {max(errors):.1%}, Spearman rho of TFLOP/s per GPU {rho:.2f}"
          + _within_groups(results))
    over = [r for r in results if not r["fits"]]
    if over:
        print(f"{len(over)} published row(s) predicted not to fit (!): a memory model's error")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"rows": results, "mean_abs_error": mean, "spearman": rho}, f, indent=1)
    return mean


def _within_groups(results: list[dict]) -> str:
    """``", within each model R"``: the mean Spearman rho over the rows' ``group`` keys (one model
    each) with two rows or more, the figure the issue asks of a model's layouts; "" without groups.
    A table of two models is otherwise ranked across them, where one model's offset orders it."""
    groups: dict[str, list[dict]] = {}
    for r in results:
        if "group" in r:
            groups.setdefault(r["group"], []).append(r)
    rhos = [spearman([r["tflops"] for r in g], [r["predicted_tflops"] for r in g])
            for g in groups.values() if len(g) > 1]
    return f", within each model {sum(rhos) / len(rhos):.2f}" if rhos else ""


def table_main(read: Callable[..., list[dict]], default_table: str, description: str,
               switches: dict[str, str] | None = None) -> int:
    """A table benchmark's command line (``--table``, ``--rows``, ``--json``, and ``switches``:
    on/off flags by help text, each passed to ``read`` as a keyword): score its rows."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--table", default=default_table)
    p.add_argument("--rows", default=None, help="1-based rows to run, e.g. 1,4,7 (default all)")
    p.add_argument("--json", default=None, help="write the rows and scores here")
    for flag, text in (switches or {}).items():
        p.add_argument(flag, action="store_true", help=text)
    a = p.parse_args()
    if a.table and not os.path.isfile(a.table):  # a published table beside the checkout (""; in the script)
        p.error(f"the published table {os.path.normpath(a.table)} is not there: it comes from the project's "
                f"shared folder (../shared/realtables beside the checkout); give its path with --table PATH")
    rows = read(a.table, **{f.lstrip("-").replace("-", "_"): getattr(a, f.lstrip("-").replace("-", "_"))
                            for f in switches or {}})
    chosen = [int(r) - 1 for r in a.rows.split(",")] if a.rows else range(len(rows))
    score([rows[i] for i in chosen], a.json)
    return 0


def main() -> int:
    return table_main(read_table, DEFAULT_TABLE, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
