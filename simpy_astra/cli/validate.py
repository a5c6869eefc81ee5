"""``simpy-astra validate LOG... --network N.yml --system S.json --out DIR``.

Simulates every size of every nccl-tests log with the given network and system, prints
measured against simulated (one row per size, the error of each, per collective the
geomean error from 1 MiB up and over all sizes) and writes DIR/validate.png (busbw against
size; skipped, with a note, without matplotlib), DIR/validate.csv and DIR/validate.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from simpy_astra.errors import InputError


def _parser() -> argparse.ArgumentParser:
    from simpy_astra.cli.args import log_parser

    p = log_parser("validate", "Compare nccl-tests logs with the simulator.",
                   network_help="network YAML (e.g. calibrate's DIR/network.yml)",
                   system_help="system JSON (e.g. calibrate's DIR/system.json)",
                   out_help="folder for validate.png, validate.csv, validate.json", system_required=True)
    p.add_argument("--in-place", action="store_true", help="compare the in-place times")
    p.add_argument("--holdout", default=None, metavar="CALIBRATION_JSON",
                   help="calibrate's calibration.json: report fitted and held-out sizes apart")
    p.add_argument("--regimes", default=None, metavar="REGIMES_JSON",
                   help="calibrate --protocol-regimes' regimes.json: each size with its side's network")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    from simpy_astra.calibration.inputs import load_backend

    args.backend = load_backend(args.backend, args.plugin)  # a plug-in's too, once --plugin has loaded it
    for flag, given in (("--holdout", args.holdout), ("--regimes", args.regimes)):
        if given is not None and not given.strip():  # an unset variable: not a run without it
            raise InputError(f"{flag}: must be a file path (got an empty string); leave the flag out to validate "
                             f"without it")
    import importlib.util

    from simpy_astra.calibration.holdout import (
        changed_logs,
        holdout_lines,
        load_fitted_lines,
        other_network,
        report_holdout,
    )
    from simpy_astra.calibration.inputs import load_network, load_system
    from simpy_astra.calibration.local_copy import check_memory_bw, copy_notes
    from simpy_astra.calibration.nccl_log import parse_logs
    from simpy_astra.calibration.regimes import load_regimes
    from simpy_astra.calibration.report import (
        output_dir,
        print_table,
        simulate_logs,
        summarise,
        summary_line,
        write_csv,
        write_plot,
    )
    from simpy_astra.report.console import Output, say_wrapped

    t0 = time.perf_counter()
    check_memory_bw(args.gpu_memory_bw)
    logs = parse_logs(args.logs, args.collective)
    network = load_network(args.network)
    system = load_system(args.system, network)
    output_dir(args.out, ("validate.png", "validate.csv", "validate.json"))
    fitted = load_fitted_lines(args.holdout, args.in_place) if args.holdout is not None else None  # before the simulations
    for line in [*changed_logs(logs, fitted), *other_network(network, args.network, fitted)] if fitted is not None else ():
        say_wrapped(f"warning: {line}")
    results = simulate_logs(logs, network, system, in_place=args.in_place, backend=args.backend,
                            network_for=load_regimes(args.regimes) if args.regimes is not None else None,
                            gpu_memory_gbps=args.gpu_memory_bw)
    holdout = report_holdout(results, logs, fitted) if fitted is not None else None
    print_table(results, Output(sys.stdout))  # a table on a terminal, plain lines in a pipe or file
    summaries = summarise(results)
    for line in [*map(summary_line, summaries), *holdout_lines(holdout or []),
                 *copy_notes(logs, args.gpu_memory_bw, args.in_place)]:
        say_wrapped(line, sys.stdout)  # wrapped to the terminal, or within 80 columns in a pipe or a file
    png = os.path.join(args.out, "validate.png")
    plotted = importlib.util.find_spec("matplotlib") is not None  # the figures need nothing else
    if plotted:
        shape = " x ".join(f"{t} {n}" for t, n in zip(network["topology"], network["npus_count"], strict=True))
        write_plot(results, png, f"{shape}: measured (markers) vs simulated (lines)")
    write_csv(results, os.path.join(args.out, "validate.csv"))
    from simpy_astra.infra import files

    with files.open_output(os.path.join(args.out, "validate.json"), "--out") as f:
        json.dump({"summaries": [s.as_dict() for s in summaries],
                   "network": os.path.abspath(args.network), "system": os.path.abspath(args.system),
                   "backend": args.backend, "holdout": [h.as_dict() for h in holdout or []]},
                  f, indent=1)
        f.write("\n")
    took = f"in {time.perf_counter() - t0:.1f} s"
    if plotted:
        say_wrapped(f"wrote {files.escaped(png)} (and validate.csv, validate.json) {took}", sys.stdout)
    else:
        say_wrapped(f"wrote {files.escaped(os.path.join(args.out, 'validate.csv'))} and validate.json {took}; skipped "
                    f"validate.png: matplotlib is not installed (pip install 'simpy-astra[calibrate]')", sys.stdout)
    return 0
