"""A tenth hunt for inputs that ran as something other than what they say, or were refused in
words that sent the user elsewhere: each is now refused (or stated) before the run in one line
naming the file (or flag), the field and the fix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import SCENARIOS, error_lines
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.test_hostile_hunt8 import _scenario, registries  # noqa: F401 (a fixture)
from tests.wrapped_lines import unwrapped

#: nccl-tests logs of real machines (tests/data/nccl/README.md)
SCENARIOS_NCCL = Path(__file__).resolve().parent / "data" / "nccl"


def _run(capsys, path) -> tuple[str, list[str]]:
    """A run's headline (stdout) and its warning lines."""
    assert main(["run", str(path), "--quiet"]) == 0
    out, err = capsys.readouterr()
    return out.strip(), [line for line in unwrapped(err) if line.startswith("warning:")]


def _megatron(tmp_path, args: str, name: str = "s.yaml", **workload):
    return _scenario(tmp_path, {"workload": {"generate": "megatron", "args": args, **workload},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}, name)


def test_sequence_parallel_at_tp_1_is_turned_off_with_megatrons_warning(tmp_path, capsys):
    # Megatron-LM's validate_args: at tensor_model_parallel_size 1 it warns "Disabling sequence
    # parallelism because tensor model parallelism is disabled" and sets sequence_parallel False.
    # The step was the same as without the flag, and nothing said so
    plain = _run(capsys, _megatron(tmp_path, ARGS, "a.yaml"))
    path = _megatron(tmp_path, ARGS + " --sequence-parallel", "b.yaml")
    headline, warnings = _run(capsys, path)
    assert plain[1] == [] and headline == plain[0]
    assert warnings == [f"warning: {path}: workload.args: --sequence-parallel with --tensor-model-parallel-size 1: "
                        f"Megatron turns it off ('Disabling sequence parallelism because tensor model parallelism "
                        f"is disabled') and runs without it, as this step does; remove --sequence-parallel, or set "
                        f"tp 2 or more"]
    assert _run(capsys, _megatron(tmp_path, ARGS + " --sequence-parallel --tensor-model-parallel-size 2",
                                  "c.yaml"))[1] == []


def test_generate_megatron_says_the_same_warning(tmp_path, capsys):
    out = tmp_path / "t" / "m"
    out.parent.mkdir()
    assert main(["generate", "megatron", "--gpus", "8", "--output", str(out), "--",
                 *ARGS.split(), "--sequence-parallel"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warning: generate megatron: arguments after --: --sequence-parallel with "
                   "--tensor-model-parallel-size 1: Megatron turns it off ('Disabling sequence parallelism because "
                   "tensor model parallelism is disabled') and runs without it, as this step does; remove "
                   "--sequence-parallel, or set tp 2 or more"], err


NONE_PASSED = '''
from simpy_astra.network.link import LinkElement
from simpy_astra.network.switch import SwitchElement


class NoArrival(LinkElement):
    def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival):
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, None)


class NoForward(SwitchElement):
    def __init__(self, env, device, forward):
        super().__init__(env, device, None)
'''


@pytest.mark.parametrize("key, model, base, name, what", [
    ("link-model", "h10_none:NoArrival", "LinkElement", "on_arrival", "reaches the far end"),
    ("switch-model", "h10_none:NoForward", "SwitchElement", "forward", "the switch passes on"),
])
def test_a_model_that_passes_none_on_as_its_way_out_is_named(tmp_path, capsys, monkeypatch, key, model, base,
                                                             name, what):
    # "error: internal error TypeError: 'NoneType' object is not callable (this is a simpy-astra
    # bug ...)" at the first message: the bug was the model's
    from simpy_astra.network import models
    from tests.test_extension_misuse import scenario

    monkeypatch.setattr(models, "LINKS", dict(models.LINKS))  # the lookup keeps what it imported
    monkeypatch.setattr(models, "SWITCHES", dict(models.SWITCHES))

    (tmp_path / "h10_none.py").write_text(NONE_PASSED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "h10_none", raising=False)
    path = scenario(tmp_path, f"{{topology: [Switch], npus_count: [4], bandwidth: [50.0], latency: [500.0], "
                              f"{key}: '{model}'}}")
    err = error_lines(capsys, ["run", path, "--quiet"])
    assert err == [f"error: {path}: network: field '{key}' ({model}) passed None as {name} to {base}.__init__, "
                   f"which calls it with every message that {what}: pass on the {name} it was given (or a "
                   f"function that calls it)"], err


MISMATCHED = '''
def sizes(ctx):
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    ctx.send(right, ctx.size_bytes // n)
    yield ctx.recv(left, ctx.size_bytes // n + 1)


def tags(ctx):
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    ctx.send(right, 100, tag=7)
    yield ctx.recv(left, 100, tag=8)
'''


@pytest.mark.usefixtures("registries")
@pytest.mark.parametrize("algorithm, sent, waited, differ", [
    # 4,096 B over 4 members: 1,024 B sent, 1,025 B waited for
    ("sizes", "1024 B to NPU 1 with tag 500000000", "1025 B from NPU 0 with tag 500000000", "sizes 1024 B and 1025 B"),
    ("tags", "100 B to NPU 1 with tag 7", "100 B from NPU 0 with tag 8", "tags 7 and 8"),
])
def test_a_send_and_a_receive_that_do_not_match_are_said_to(tmp_path, capsys, monkeypatch, algorithm, sent, waited,
                                                             differ):
    # the stall listed "sent ... for which NPU 1 never posted a matching receive" and, further
    # on, "waits for ... which NPU 0 never sent", as if two messages were lost: one message's
    # two sides disagreed
    from tests.test_extension_misuse import SYSTEM, scenario

    (tmp_path / "h10_mismatch.py").write_text(MISMATCHED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "h10_mismatch", raising=False)
    path = scenario(tmp_path, "{topology: [Ring], npus_count: [4], bandwidth: [50.0], latency: [500.0]}")
    text = open(path).read().replace(SYSTEM, SYSTEM.replace("all-reduce-implementation: [ring]",
                                                            f"all-reduce-implementation: ['h10_mismatch:{algorithm}']"))
    open(path, "w").write(text)
    assert main(["run", path, "--quiet"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unfinished (a send and a receive did not match, so the receive waits for ever)" in err[0]
    phase = "all_reduce phase of chunk stream 0"
    assert (f"Unmatched messages: a send and a receive did not match ({differ}): NPU 0 {phase} sent {sent}; "
            f"NPU 1 {phase} waits for {waited} (a receive takes a send of its size and tag); ") in err[0], err
    assert "never sent" not in err[0] and "never posted" not in err[0]


BAD_TRACES = '''
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import COMM_SEND_NODE


def garbage(params, prefix):
    for rank in range(4):
        open(f"{prefix}.{rank}.et", "wb").write(b"\\x07garbage")


def far_peer(params, prefix):
    for rank in range(4):
        write_et(f"{prefix}.{rank}.et", [make_node(0, "s", COMM_SEND_NODE,
                                                   attrs={"comm_dst": 99, "comm_size": 10, "comm_tag": 1})])
'''


def users_generator_scenario(tmp_path, monkeypatch, module: str, source: str, generator: str) -> Path:
    """A 4-NPU ring scenario whose workload is ``generate: module:generator`` from ``source``,
    with a cache and a generator registry of the test's own."""
    from simpy_astra.workloads import generator_registry
    from tests.test_extension_misuse import SYSTEM

    monkeypatch.setattr(generator_registry, "GENERATORS", dict(generator_registry.GENERATORS))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    path = tmp_path / "s.yaml"
    path.write_text(f"workload: {{generate: '{module}:{generator}'}}\nsystem: {SYSTEM}\n"
                    f"network: {{topology: [Ring], npus_count: [4], bandwidth: [50.0], latency: [500.0]}}\n")
    return path


@pytest.mark.parametrize("generator, file, problem", [
    ("garbage", "h10_traces_garbage.0.et",
     "record 0 at byte 0: 7 bytes do not parse as ChakraProtoMsg.GlobalMetadata (not a Chakra ET file?)"),
    ("far_peer", "h10_traces_far_peer.0.et", "node 0: comm_dst 99 must be another NPU id in 0..3"),
])
def test_a_users_generator_that_writes_a_bad_trace_is_named_as_the_scenario_names_it(
        tmp_path, capsys, monkeypatch, generator, file, problem):
    # "error: /home/.../.cache/simpy-astra/workloads/h10_traces_garbage-<hash>/h10_traces_garbage.0.et:
    # ...; it is a corrupt workload cache entry: delete ... to generate it again": a file the
    # user never wrote, and deleting it wrote the same trace again
    path = users_generator_scenario(tmp_path, monkeypatch, "h10_traces", BAD_TRACES, generator)
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: workload.generate: generator 'h10_traces:{generator}' wrote {file}, which cannot "
                   f"run ({problem}); fix the generator (its traces are made anew once it is edited)"], err


LLAMA_405B_LIKE = ("--num-layers 128 --hidden-size 16384 --num-attention-heads 128 --group-query-attention "
                   "--num-query-groups 8 --ffn-hidden-size 53248 --swiglu --seq-length 8192 --micro-batch-size 1 "
                   "--global-batch-size 2048 --bf16 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 "
                   "--sequence-parallel --use-distributed-optimizer --vocab-size 128256 --normalization RMSNorm "
                   "--position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights")


def test_a_folded_16384_gpu_nodes_csv_lists_each_orbit_once_and_an_unfolded_one_is_refused(tmp_path, capsys):
    # 16,384 H100s, dp 128 x tp 8 x pp 16: every GPU's rows were 64.6 million, at least 3.7 GB,
    # refused; each orbit's rows once (npus.csv naming the GPU simulated for each) are a few MB
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": LLAMA_405B_LIKE},
                                "cluster": {"preset": "dgx-h100", "gpus": 16384}})
    out = tmp_path / "csv"
    err = error_lines(capsys, ["run", str(path), "--quiet", "--csv-out", str(out), "--fold-symmetry", "off"])
    assert len(err) == 1 and err[0].startswith("error: --csv-out: nodes.csv would be at least "), err
    size = float(err[0].split("at least ")[1].split(" GB")[0])
    rows = int(err[0].split(" GB (")[1].split(" rows")[0].replace(",", ""))
    # each row holds at least its name, its node id and 9 commas: > 20 bytes
    assert size > 1.0 and size * 1e9 > 20 * rows and rows > 16384 * 128 // 16
    assert err[0].endswith(" rows, each node of all 16,384 NPUs), past 1.0 GB; leave out --csv-out (the per-NPU "
                           "figures are in --json-out), or run fewer NPUs, or let the run fold (a folded run "
                           "lists each orbit's rows once)")
    assert not out.exists()
    assert main(["run", str(path), "--quiet", "--csv-out", str(out)]) == 0
    with open(out / "npus.csv") as f:
        simulated_for = [line.rstrip("\n").split(",") for line in f]
    assert simulated_for[0] == ["npu", "simulated_npu"] and [int(n) for n, _ in simulated_for[1:]] == list(range(16384))
    listed = {simulated for _, simulated in simulated_for[1:]}
    with open(out / "nodes.csv") as f:
        written = [line.split(",", 1)[0] for line in f]
    assert written[0] == "npu" and set(written[1:]) == listed and len(listed) < 64
    assert len(written) - 1 < rows * len(listed) / 16384 * 1.01  # the orbits' rows alone


@pytest.mark.parametrize("generated", [True, False])
def test_the_csv_bound_is_under_the_file_written_and_refuses_past_the_limit(tmp_path, capsys, monkeypatch, generated):
    # the bound leaves out the digits of times it cannot know before the run: under the file,
    # not far under it; a limit under it refuses, for generated traces and for ET files alike
    from simpy_astra.report import trace_size

    path = _scenario(tmp_path) if generated else SCENARIOS / "default.yaml"
    assert main(["run", str(path), "--quiet", "--csv-out", str(tmp_path / "a")]) == 0
    written = (tmp_path / "a" / "nodes.csv")
    rows = len(written.read_text().splitlines()) - 1
    seen: list[int] = []
    real = trace_size.check_csv_size
    monkeypatch.setattr(trace_size, "check_csv_size", lambda per_npu, total: (seen.append(per_npu), real(per_npu, total)))
    monkeypatch.setattr(trace_size, "LIMIT_BYTES", written.stat().st_size // 2)
    capsys.readouterr()
    err = error_lines(capsys, ["run", str(path), "--quiet", "--csv-out", str(tmp_path / "b")])
    bound = sum(b for b, _ in seen[-1].values())
    assert 0.5 * written.stat().st_size < bound < written.stat().st_size
    assert sum(n for _, n in seen[-1].values()) == rows
    assert err[0].startswith("error: --csv-out: nodes.csv would be at least "), err
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("field, value, words", [
    ("exclusive_dur", "abc", "'exclusive_dur' must be a number of us from 0 to 9223372036854775 (the simulated "
                             "time's horizon; got \"abc\")"),
    ("exclusive_dur", float("nan"), "'exclusive_dur' must be a number of us from 0 to 9223372036854775 (the "
                                    "simulated time's horizon; got NaN)"),
    ("exclusive_dur", -5, "'exclusive_dur' must be a number of us from 0 to 9223372036854775 (the simulated "
                          "time's horizon; got -5)"),
    ("inputs", 5, "'inputs' must be an object whose values, shapes and types are lists, as ExecutionTraceObserver "
                  "writes them (got 5)"),
    ("outputs", {"values": 5}, "'outputs' must be an object whose values, shapes and types are lists, as "
                               "ExecutionTraceObserver writes them (got {\"values\": 5})"),
])
def test_a_host_trace_node_of_the_wrong_shape_is_named(tmp_path, capsys, field, value, words):
    # each was "error: internal error ValueError/TypeError/AttributeError ... (this is a
    # simpy-astra bug ...)": aten::to (id 7) is a top-level operator, whose exclusive_dur is its time
    from tests.test_convert_pytorch import sample, write

    trace = sample(tmp_path)
    node = trace["nodes"][3]
    assert (node["id"], node["name"], node["ctrl_deps"]) == (7, "aten::to", 2)
    node[field] = value
    host = write(tmp_path, "host.json", trace)
    err = error_lines(capsys, ["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "pt")])
    assert err == [f"error: {host}: node '7 (aten::to)': {words}"], err


@pytest.mark.parametrize("node_id", [-4, 2**70])
def test_a_host_trace_node_id_past_chakras_is_named(tmp_path, capsys, node_id):
    # a Chakra node id is an unsigned 64-bit number: protobuf's "Value out of range" was an internal error
    from tests.test_convert_pytorch import sample, write

    trace = sample(tmp_path)
    trace["nodes"][3]["id"] = node_id
    host = write(tmp_path, "host.json", trace)
    err = error_lines(capsys, ["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "pt")])
    assert err == [f"error: {host}: node '{node_id} (aten::to)': id {node_id} is not one of 0 .. 2^63-1 (a Chakra "
                   f"node id)"], err


@pytest.mark.parametrize("npus, words", [
    # '0--3' was read as 0 to -3 and told to write '-3-0'; '1_0' (int() reads it as 10), '+1' and
    # an Arabic-Indic 3 were taken as NPU ids
    ("0--3", "'0--3' is no NPU id or range; give ids and ranges such as 0-7,64"),
    ("1_0", "'1_0' is no NPU id or range; give ids and ranges such as 0-7,64"),
    ("+1", "'+1' is no NPU id or range; give ids and ranges such as 0-7,64"),
    ("0,\u0663", "'\u0663' (its '\u0663' is U+0663 ARABIC-INDIC DIGIT THREE, not ASCII: retype it) is no NPU id or "
                 "range; give ids and ranges such as 0-7,64"),
])
def test_trace_npus_takes_ascii_ids_and_ranges_only(tmp_path, capsys, npus, words):
    err = error_lines(capsys, ["run", str(_scenario(tmp_path)), "--trace-out", str(tmp_path / "t.json"),
                               "--trace-npus", npus])
    assert err == [f"error: --trace-npus: {words}"], err
    assert not (tmp_path / "t.json").exists()


def test_trace_npus_may_space_a_range(tmp_path, capsys):
    from tests.test_hostile_hunt9 import _events_by_npu

    assert main(["run", str(_scenario(tmp_path)), "--quiet", "--trace-out", str(tmp_path / "t.json"),
                 "--trace-npus", "1 - 2, 5"]) == 0
    assert sorted(_events_by_npu(tmp_path / "t.json")) == [1, 2, 5]


def test_convert_text_refuses_more_dimensions_than_a_network_can_have(tmp_path, capsys):
    # --num-dims 1000000000 built [True] * 10^9 on every collective: still running after 120 s
    # (timed out, measured); 17 wrote 17 involved dimensions, which no network of the 65,536
    # NPUs a trace is written for can have (every dimension holds 2 or more: 2^16 = 65,536)

    text = SCENARIOS / "workloads" / "text" / "Resnet50_DataParallel.txt"
    argv = ["convert", "text", "--input", str(text), "--output", str(tmp_path / "r"), "--num-npus", "2",
            "--num-passes", "1", "--num-dims"]
    err = error_lines(capsys, [*argv, "17"])
    assert err == ["error: --num-dims must be from 1 to 16 (got 17): each dimension of a network holds 2 or more "
                   "NPUs, and a trace is written for at most 65,536 NPUs = 2^16"], err
    assert not list(tmp_path.iterdir())
    assert main([*argv, "16"]) == 0


@pytest.mark.parametrize("edit, words", [
    (("dur", "abc"), "'dur' must be a number of us from 0 to 9223372036854775 (the simulated time's horizon; got "
                     "\"abc\")"),
    (("dur", float("nan")), "'dur' must be a number of us from 0 to 9223372036854775 (the simulated time's "
                            "horizon; got NaN)"),
    (("ts", None), "'ts' must be the kernel's start, a finite number of us (got null)"),
    (("stream", "x"), "args 'stream' must be the CUDA stream's number (got \"x\")"),
    (("External id", [30]), "args 'External id' must be an id, a number as torch.profiler writes it (got [30])"),
])
def test_a_kineto_kernel_of_the_wrong_shape_is_named_in_the_device_trace(tmp_path, capsys, monkeypatch, edit, words):
    # each was an internal error (float('abc'), int(nan), sorting None beside numbers, a list as a
    # dict key); a negative 'dur' was named in a temporary file of the linker's (linked.0.json)
    from simpy_astra.workloads.pytorch import mlc
    from tests.test_pytorch_host_trace import host_trace, kineto
    from tests.test_pytorch_host_trace import write as write_json

    monkeypatch.setattr(mlc, "available", lambda: False)  # our linker, whatever is installed
    events = kineto()["traceEvents"]
    gemm = events[2]
    assert gemm["name"] == "sm90_xmma_gemm_bf16" and gemm["cat"] == "kernel"
    key, value = edit
    (gemm if key in ("dur", "ts") else gemm["args"])[key] = value
    host = write_json(tmp_path / "host.json", host_trace())
    device = write_json(tmp_path / "kineto.json", {"traceEvents": events})
    err = error_lines(capsys, ["convert", "pytorch", "--host", str(host), "--device", str(device),
                               "--output", str(tmp_path / "pt")])
    assert err == [f"error: {device}: traceEvents[2] (\"sm90_xmma_gemm_bf16\"): {words}"], err


def test_an_nccl_tests_row_whose_size_is_not_its_count_is_refused(tmp_path, capsys):
    # the 32 MiB row (count 8,388,608 floats) edited to read 1 MiB: a second 1 MiB point with
    # 32 MiB's time joined the fit, which reported success. nccl-tests prints max(sendBytes,
    # expectedBytes) beside nbytes / wordSize (common.cu): an all-reduce's size is count x 4 B
    data = SCENARIOS_NCCL / "hgx-h100-2node-ib"
    lines = (data / "all_reduce.log").read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if line.split()[:2] == ["33554432", "8388608"])
    lines[row] = lines[row].replace("33554432", " 1048576", 1)
    log = tmp_path / "all_reduce.log"
    log.write_text("\n".join(lines) + "\n")
    err = error_lines(capsys, ["calibrate", str(log), "--network", str(data / "network.yml"),
                               "--out", str(tmp_path / "out")])
    assert err == [f"error: {log}:{row + 1}: size 1048576 B is not count 8388608 x 4 B (float) = 33554432 B, as "
                   f"nccl-tests prints an all_reduce: an edited row, or mixed collectives or GPU counts in one log? "
                   f"(or pass the right --collective)"], err
    assert not (tmp_path / "out").exists()


def test_every_shipped_nccl_tests_log_keeps_the_size_rule():
    # an all-gather's, reduce-scatter's and all-to-all's size is count x type x n GPUs (8 here)
    from simpy_astra.calibration.nccl_log import parse_log

    logs = sorted(SCENARIOS_NCCL.glob("*/*.log"))
    assert len(logs) == 6 and all(parse_log(str(path)).rows for path in logs)


def test_a_megatron_word_holding_a_flag_and_its_value_is_named(tmp_path, capsys):
    # a YAML list item '--num-layers 2' was told "--num-layers 2 is not an argument of
    # Megatron-LM's pretrain_gpt.py ...; did you mean --num-layers?", and a whole command line
    # quoted after -- was one unknown 'argument' of 150 characters
    args = ["--num-layers 2", *ARGS.split()[2:]]
    path = _megatron(tmp_path, args)
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: workload.args: '--num-layers 2' is one word with spaces in it; give each flag and "
                   f"each value as a word of its own (unquoted after --, or one list item each in YAML: "
                   f"[--num-layers, 2])"], err
    err = error_lines(capsys, ["generate", "megatron", "--gpus", "8", "--output", str(tmp_path / "m"), "--", ARGS])
    assert err == ["error: generate megatron: arguments after --: '--num-layers 2 --hidden-size 256 --num-a ... "
                   "ocab-size 32000' is one word with spaces in it; give each flag and each value as a word of its "
                   "own (unquoted after --, or one list item each in YAML: [--num-layers, 2])"], err
    assert main(["run", str(_megatron(tmp_path, ["--num-layers", "2", *ARGS.split()[2:]], "b.yaml")), "--quiet"]) == 0


def test_a_folded_runs_csv_refusal_does_not_offer_folding():
    """A folded run past the limit is told to leave out --csv-out or run fewer NPUs, not to fold."""
    from simpy_astra.errors import InputError
    from simpy_astra.report.trace_size import LIMIT_BYTES, check_csv_size

    with pytest.raises(InputError) as folded:
        check_csv_size({0: (LIMIT_BYTES + 1, 10)}, 64)
    assert "each standing for its orbit of the 64" in str(folded.value) and "fold" not in str(folded.value)[-60:]
    with pytest.raises(InputError) as unfolded:
        check_csv_size({n: (LIMIT_BYTES, 10) for n in range(2)}, 2)
    assert str(unfolded.value).endswith("or let the run fold (a folded run lists each orbit's rows once)")
