"""A fifth hunt for inputs that ran as something other than what they say: each is now refused
in one line naming the file, the field and the fix, or says plainly what it is."""

from __future__ import annotations

import yaml

from simpy_astra.cli.main import main


def _scenario(tmp_path, args: str, cluster: dict):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": args}, "cluster": cluster}))
    return path


def test_a_quiet_run_of_a_job_that_does_not_fit_says_so(tmp_path, capsys):
    # GPT-3 175B's 96 layers of h 12288 over tp 2 alone: 12 x 96 x 12288^2 / 2 = 87e9 parameters
    # a GPU, at 16 bytes each (fp16 weights, fp32 gradients and Adam's two moments, Megatron's
    # mixed precision) 1.3 TB, sixteen times an A100's 80 GiB. --quiet printed its step time
    # alone, exit status 0, with nothing to tell a script the job cannot run
    args = ("--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --micro-batch-size 1 "
            "--global-batch-size 32 --tensor-model-parallel-size 2 --bf16 --vocab-size 32000")
    assert 12 * 96 * 12288**2 / 2 * 16 > 16 * 80 * 2**30
    path = _scenario(tmp_path, args, {"preset": "dgx-a100-80gb", "gpus": 16})
    assert main(["run", str(path), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and out.startswith("iteration time ")  # the headline, as before
    lines = [line for line in err.splitlines() if "DOES NOT FIT" in line]
    assert len(lines) == 1 and "of 80 GiB" in lines[0] and len(lines[0]) <= 80, err


def test_a_quiet_run_of_a_job_that_fits_prints_its_headline_alone(tmp_path, capsys):
    args = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            "--global-batch-size 32 --tensor-model-parallel-size 2 --bf16 --vocab-size 32000")
    assert main(["run", str(_scenario(tmp_path, args, {"preset": "dgx-a100-80gb", "gpus": 16})), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and "FIT" not in err
