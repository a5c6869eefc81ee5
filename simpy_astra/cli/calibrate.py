"""``simpy-astra calibrate LOG... --network N.yml [--system S.json] --out DIR``.

Reads nccl-tests logs, fits the network's per-dimension latency and bandwidth so that the
simulator reproduces the logged times, and writes DIR/network.yml, DIR/system.json and
DIR/calibration.json (what was fitted, from what, and how well). See docs/calibration.md, "Calibrating
to a real cluster", and ``simpy_astra/calibration/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

from simpy_astra.config.yaml_reader import dump_yaml
from simpy_astra.errors import InputError
from simpy_astra.infra.files import escaped


def _parser() -> argparse.ArgumentParser:
    from simpy_astra.cli.args import log_parser

    p = log_parser("calibrate", "Fit a network to nccl-tests logs.",
                   network_help="network YAML: topology and starting values",
                   system_help="system JSON (default: calibrate's, see docs/calibration.md)",
                   out_help="folder for network.yml, system.json, calibration.json", system_required=False)
    p.add_argument("--min-size", type=int, default=1 << 20, limits=(1, 2**63 - 1),
                   help="fit sizes from this many bytes up (default 1 MiB)")
    p.add_argument("--in-place", action="store_true", help="fit the in-place times (default out-of-place)")
    p.add_argument("--hold-out-every", type=_hold_out_every, default=0, metavar="N",
                   help="leave every N-th size of each log out of the fit, for validate --holdout")
    p.add_argument("--fit-algorithms", action="store_true",
                   help="choose each logged collective's algorithm by the fit (see docs/calibration.md)")
    p.add_argument("--protocol-regimes", action="store_true",
                   help="find where NCCL switches protocol in the logs; fit each side (regimes.json)")
    p.add_argument("--nccl-algo", action="append", default=[], metavar="ALGO:FROM[:TO]",
                   help="fit NCCL's ALGO (ring, tree, nvls) on the all-reduce log's sizes FROM..TO bytes, "
                        "where it ran (nccl.json; repeatable)")
    p.add_argument("--nccl-no-ll128", action="append", default=[], metavar="ALGO", choices=("ring", "tree"),
                   help="with --nccl-algo: NCCL does not run ALGO with LL128 across this machine's nodes "
                        "(its channels reach the NICs past a PCIe switch; repeatable)")
    return p


def _hold_out_every(text: str) -> int:
    """``--hold-out-every``: 0 or 2 or more. Its own type, as it takes no range: a fraction was
    told 'write 1 or 2' (the integers near it), and 1 was then refused."""
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        near = sorted({n if n != 1 else 2 for n in (math.floor(number), math.ceil(number)) if n >= 0}) \
            if math.isfinite(number) else []
        fix = f"; write {' or '.join(map(str, near))}" if near else ""
        raise argparse.ArgumentTypeError(f"takes 0 (fit every size) or 2 or more, a whole number (got "
                                         f"{text!r}){fix}") from None
    if value == 1 or value < 0:
        why = "; 1 would hold out every size, leaving nothing to fit" if value == 1 else ""
        raise argparse.ArgumentTypeError(f"takes 0 (fit every size) or 2 or more (got {value}){why}")
    return value


def _calibration_record(args: argparse.Namespace, logs: list, held_out: Any, network: dict, cal: Any,
                        algorithms: dict | None) -> dict:
    """calibration.json: each log with its digest and fit, what was given and what was fitted."""
    from simpy_astra.calibration.holdout import digest, fit_record
    from simpy_astra.calibration.local_copy import COPYING_COLLECTIVES, memory_gbps
    from simpy_astra.calibration.report import gm_abs_error

    return {
        "logs": [{"path": log.path, "sha256_16": digest(log.path), "collective": log.collective,
                  "gpus": log.ranks, "sizes": len(log.rows),
                  "own_chunk_copy_memory_GBps": (memory_gbps(log.devices, args.gpu_memory_bw)
                                                 if log.collective in COPYING_COLLECTIVES
                                                 and not args.in_place else None), **rec}
                 for log, rec in zip(logs, fit_record(logs, held_out, args.min_size, args.in_place), strict=True)],
        "backend": args.backend,
        "algorithms": algorithms,
        "min_size_bytes": args.min_size,
        "times": "in-place" if args.in_place else "out-of-place",
        "given": {"bandwidth": network["bandwidth"], "latency": network["latency"]},
        "fitted": {"bandwidth": cal.network["bandwidth"], "latency": cal.network["latency"],
                   "endpoint_delay_ns": cal.system["endpoint-delay"]},
        "dimension_groups": cal.fit.groups,
        "fit_points": cal.fit.used_points,
        "simulated_errors": [round(e, 6) for e in cal.sim_errors],
        "geomean_error": round(gm_abs_error(cal.sim_errors), 6),
    }


def _print_fit(out: Any, args: argparse.Namespace, logs: list, network: dict, cal: Any, nccl: dict | None,
               algorithms: dict | None) -> None:
    """The logs read, the calibrated network beside the given one, and the algorithms chosen."""
    from simpy_astra.calibration.local_copy import copy_notes

    for log in logs:
        skipped = f", {log.skipped_zero_size} rows of 0 bytes skipped" if log.skipped_zero_size else ""
        if log.tables > 1:
            skipped += f", rows of {log.tables} tables (runs) together"
        out.prose(f"read {log.path}: {log.collective} on {log.ranks} GPUs, {len(log.rows)} sizes"
                 f"{skipped}")
    for note in copy_notes(logs, args.gpu_memory_bw, args.in_place):
        out.prose(note)
    # the network YAML's bandwidth unit: ASTRA-sim moves bandwidth * 2^30 bytes a second
    out.table("calibrated network", ("dim", "topology", "NPUs", "bandwidth GiB/s", "latency ns"),
              [(str(d), topo, str(network["npus_count"][d]),
                f"{network['bandwidth'][d]:g} -> {cal.network['bandwidth'][d]:g}",
                f"{network['latency'][d]:g} -> {cal.network['latency'][d]:g}")
               for d, topo in enumerate(network["topology"])],
              align=("right", "left", "right", "right", "right"))
    if nccl is not None:
        out.prose(f"nccl: the call's fixed cost {nccl['launch_us']:g} us (fitted on sizes up to 4 KiB)" if nccl["launch_sizes"]
                 else "nccl: the call's fixed cost 0 us (not fitted: no size of the log is up to 4 KiB)")
        for key, factors in nccl["protocols"].items():
            out.prose(f"nccl {key}: bandwidth x {factors['bandwidth']:g}, latency x {factors['latency']:g} of NCCL's")
    sizes = sorted((nccl or {}).get("sizes", []) + (nccl or {}).get("outside", []), key=lambda r: r["size_bytes"])
    if sizes:  # a table: as lines they ran to 144 columns
        out.table("nccl: each size of the log against NCCL's choice",
                  ("bytes", "log's", "role", "measured us", "predicted us", "chosen", "protocol", "channels",
                   "threads", "error"),
                  [(f"{r['size_bytes']:,}", r["algorithm"] or "-", r["role"], f"{r['measured_us']:g}",
                    f"{r['predicted_us']:g}", r["chosen"], r["protocol"], str(r["channels"]), str(r["threads"]),
                    f"{100 * r['error']:+.1f}%") for r in sizes],
                  align=("right", "left", "left", "right", "right", "left", "left", "right", "right", "right"))
    for coll, choice in (algorithms or {}).items():
        out.prose(f"{coll}: {choice['implementation']}, {choice['source']}")


def _write_files(args: argparse.Namespace, logs: list, held_out: Any, network: dict, cal: Any,
                 algorithms: dict | None, nccl: dict | None, regimes: dict | None) -> tuple[str, str, str]:
    """The calibrated network.yml, system.json and calibration.json (and nccl.json, regimes.json
    when fitted) in --out; their paths."""
    from simpy_astra.infra import files

    net_path = os.path.join(args.out, "network.yml")
    sys_path = os.path.join(args.out, "system.json")
    info_path = os.path.join(args.out, "calibration.json")
    try:
        with files.open_output(net_path, "--out") as f:
            f.write("# calibrated by simpy-astra calibrate from "
                    + ", ".join(os.path.basename(p) for p in args.logs) + "\n")
            dump_yaml(cal.network, f, sort_keys=False)
        with files.open_output(sys_path, "--out") as f:
            json.dump(cal.system, f, indent=2)
            f.write("\n")
        with files.open_output(info_path, "--out") as f:
            json.dump(_calibration_record(args, logs, held_out, network, cal, algorithms), f, indent=1)
            f.write("\n")
        if nccl is not None:
            with files.open_output(os.path.join(args.out, "nccl.json"), "--out") as f:
                json.dump(nccl, f, indent=1)
                f.write("\n")
        if regimes is not None:
            with files.open_output(os.path.join(args.out, "regimes.json"), "--out") as f:
                json.dump(regimes, f, indent=1)
                f.write("\n")
    except OSError as exc:
        raise InputError(f"--out: cannot write into {args.out} ({exc.strerror or exc})") from None
    return net_path, sys_path, info_path


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    from simpy_astra.calibration.inputs import load_backend

    args.backend = load_backend(args.backend, args.plugin)  # a plug-in's too, once --plugin has loaded it
    from simpy_astra.calibration.holdout import held_out_rows
    from simpy_astra.calibration.inputs import load_network, load_system
    from simpy_astra.calibration.local_copy import check_memory_bw
    from simpy_astra.calibration.model import calibrate
    from simpy_astra.calibration.nccl_log import parse_logs
    from simpy_astra.calibration.report import gm_abs_error, output_dir
    from simpy_astra.report.console import Output

    if args.min_size < 1:
        raise InputError(f"--min-size must be >= 1 byte (got {args.min_size})")
    if args.nccl_no_ll128 and not args.nccl_algo:
        raise InputError(f"--nccl-no-ll128 {args.nccl_no_ll128[0]}: it tells --nccl-algo's fit which protocols NCCL "
                         f"runs, and no --nccl-algo is given; add --nccl-algo ALGO:FROM[:TO], or drop it")
    check_memory_bw(args.gpu_memory_bw)
    from simpy_astra.calibration.nccl_algorithms import parse_ranges

    ranges = parse_ranges(args.nccl_algo)
    t0 = time.perf_counter()
    logs = parse_logs(args.logs, args.collective)
    held_out = held_out_rows(logs, args.hold_out_every, args.min_size)
    network = load_network(args.network)
    system = load_system(args.system, network)
    output_dir(args.out, ("network.yml", "system.json", "calibration.json",
                          *(("regimes.json",) if args.protocol_regimes else ()),
                          *(("nccl.json",) if args.nccl_algo else ())))
    nccl = None
    if args.nccl_algo:
        from simpy_astra.calibration.nccl_algorithms import fit_log

        if len(logs) != 1 or logs[0].collective != "all_reduce":
            raise InputError("--nccl-algo: give one all-reduce log (NCCL's algorithms are fitted per machine)")
        nccl = fit_log(logs[0], network, ranges, args.in_place, tuple(args.nccl_no_ll128))
    algorithms = None
    if args.fit_algorithms:
        from simpy_astra.calibration.algorithms import fit_algorithms

        system, algorithms = fit_algorithms(logs, network, system, args.min_size, args.in_place,
                                            args.backend, held_out, args.gpu_memory_bw)
    cal = calibrate(logs, network, system, min_size=args.min_size, in_place=args.in_place,
                    backend=args.backend, held_out=held_out, gpu_memory_gbps=args.gpu_memory_bw)

    out = Output(sys.stdout)  # a table on a terminal; plain lines within 80 columns in a pipe or file
    regimes = None
    if args.protocol_regimes:
        from simpy_astra.calibration.regimes import fit_regimes

        regimes = fit_regimes(logs, network, system, cal, args.min_size, args.in_place, args.backend, held_out,
                              args.gpu_memory_bw)
        sw = (regimes or {}).get("switch")
        out.prose(f"protocol switch: {sw['log']} between {sw['last_below_bytes']} and {sw['from_bytes']} "
                 f"bytes ({100 * sw['jump']:+.0f}%); regimes.json fits each side" if sw else
                 "protocol switch: none seen in the logs (no regimes.json)")
    _print_fit(out, args, logs, network, cal, nccl, algorithms)
    out.prose(f"endpoint delay {cal.system['endpoint-delay']} ns, "
             f"{cal.system['preferred-dataset-splits']} chunk(s) per collective (kept)")
    if cal.uncovered_dims:
        text = f"no log spans dimension(s) {cal.uncovered_dims}; their values are the given ones"
        out.prose(f"warning: {text}", f"[yellow]warning[/yellow]: {text}")
    out.prose(f"fitted on {cal.fit.used_points} sizes >= {args.min_size} bytes: simulated with the "
             f"fitted values, geomean error {100 * gm_abs_error(cal.sim_errors):.1f}%, mean |error| "
             f"{100 * sum(abs(e) for e in cal.sim_errors) / len(cal.sim_errors):.1f}% "
             f"({cal.simulations} simulations, {cal.rounds} round(s))")

    net_path, sys_path, info_path = _write_files(args, logs, held_out, network, cal, algorithms, nccl, regimes)
    extra = f", {escaped(os.path.join(args.out, 'nccl.json'))}" if nccl is not None else ""
    out.prose(f"wrote {escaped(net_path)}, {escaped(sys_path)}{extra} and {escaped(info_path)} in {time.perf_counter() - t0:.1f} s")
    return 0
