"""Megatron-LM's ``pretrain_gpt.py`` arguments, as users write them in launch scripts.

Both the 2021 names (``--checkpoint-activations``, ``--DDP-impl``,
``--num-layers-per-virtual-pipeline-stage``, ``--batch-size``) and today's
(``--recompute-granularity``, ``--use-distributed-optimizer``, ...) are read. Arguments that
cannot change the time of a step (paths, logging, learning rate, initialisation, data) are
accepted without a word; a timing argument this simulator does not model is refused naming it,
never ignored. The data-parallel size is not an argument: it follows from the GPU count as
in Megatron (``gpus / (tp x pp x cp)``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from simpy_astra.errors import InputError
from simpy_astra.workloads.megatron import (
    bounds,
    command_line,
    launcher,
    legacy_models,
    module_rules,
    rules,
)
from simpy_astra.workloads.megatron import unmodelled_flags as today
from simpy_astra.workloads.megatron.argparser import ArgparseError, Parser
from simpy_astra.workloads.megatron.flag_kinds import NOT_MODELLED, ignorable
from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.job_from_args import job_from_args
from simpy_astra.workloads.megatron.modelled_arguments import range_problem, reading_parser
from simpy_astra.workloads.megatron.notes import changed, notes
from simpy_astra.workloads.megatron.unmodelled_flags import SMALL_EFFECT

#: a job parsed before, which a parse of its words on its GPUs returns (:func:`parsed_before`)
_PARSED: ContextVar[MegatronJob | None] = ContextVar("megatron_job_parsed_before", default=None)


@contextmanager
def parsed_before(job: MegatronJob | None) -> Iterator[None]:
    """Within, a parse of ``job``'s words on its GPUs is ``job`` (its warnings name where it was
    parsed first): a sweep's ``--list`` reads a point with the scenario loader, whose generator
    parsed again the command line the point's expansion had parsed
    (:mod:`~simpy_astra.sweep.point_job`). Its launcher is checked again: the nodes may differ."""
    token = _PARSED.set(job)
    try:
        yield
    finally:
        _PARSED.reset(token)


def parse(args: str | list[str], gpus: int, where: str = "megatron args",
          gpus_where: str | None = None, gpus_per_node: int | None = None) -> MegatronJob:
    """The job that ``args`` launch on ``gpus`` GPUs (``gpus_per_node``: a node's, where a
    cluster gives them). Errors name ``where`` (the file and field the arguments came from;
    ``gpus_where`` the GPU count's) and the argument. A job Megatron-LM would refuse raises
    :class:`~simpy_astra.errors.InvalidConfigurationError`
    (:mod:`~simpy_astra.workloads.megatron.rules`); one past the simulator's bounds an
    :class:`InputError` with the estimate (:mod:`~simpy_astra.workloads.megatron.bounds`); a
    pasted launcher unlike the job an :class:`InputError` (:mod:`~simpy_astra.workloads.megatron.launcher`).
    The command line is split once, its launcher's words and Megatron's from the same split."""
    launcher_words, tokens = command_line.launch_line(args, where)
    launcher.check(launcher_words, gpus, gpus_per_node, where, gpus_where)
    before = _PARSED.get()
    if before is not None and before.gpus == gpus and before.args == " ".join(tokens):
        return before
    command_line.one_name_each(tokens, where)
    p = reading_parser()
    reading = command_line.read(tokens, p.options, lambda f: ignorable(f) or f in SMALL_EFFECT, NOT_MODELLED, where,
                                also_known=[*SMALL_EFFECT, *NOT_MODELLED])
    today.check_values(reading.others, where)
    try:
        known = p.parse_args(reading.modelled)
    except ArgparseError as exc:
        raise InputError(f"{where}: {exc}") from None
    _check_ranges(p, known, where)
    if known.num_experts == 0:  # validate_args (since 2024-07): 'if args.num_experts == 0: args.num_experts = None'
        known.num_experts = None
    _check_vocabulary(known, reading.others, where)
    bounds.check_gpus(gpus, gpus_where or where)
    rules.check(known, gpus, reading.others, where)
    module_rules.check(known, gpus, reading.others, where)
    job = job_from_args(known, gpus, where, " ".join(tokens))
    named = changed(p.options, reading.modelled, known)
    job = replace(job, warnings=(*command_line.given_twice(reading.modelled, p.options, where), *reading.others_twice,
                                 *notes(known, gpus, reading.others, where, job.transformer_engine, named)))
    job = legacy_models.priced(job, known, where)
    bounds.check_job(job, where)
    return job


#: the tokenizer whose vocabulary is GPT-2's (its ``--vocab-file``), the one assumed without ``--vocab-size``
GPT2_TOKENIZER = "GPT2BPETokenizer"


def _check_vocabulary(a: argparse.Namespace, others: dict[str, list[str]], where: str) -> None:
    """Megatron sizes the embedding and the output layer by its tokenizer's vocabulary
    (``build_tokenizer``: ``vocab_size_with_padding(tokenizer.vocab_size)``), which for any
    tokenizer but GPT-2's BPE sits in a file this simulator does not open: ``--vocab-size``
    must say it, else it would be priced as GPT-2's."""
    tokenizer = (others.get("--tokenizer-type") or [GPT2_TOKENIZER])[-1]
    if a.vocab_size is None and tokenizer != GPT2_TOKENIZER:
        raise InputError(f"{where}: --tokenizer-type {tokenizer}: Megatron reads the vocabulary from the tokenizer, "
                         f"which this simulator does not open; give --vocab-size (e.g. 32000 for Llama 2, 128256 "
                         f"for Llama 3)")


def _check_ranges(p: Parser, a: argparse.Namespace, where: str) -> None:
    for action in p.options:
        value = getattr(a, action.dest, None)
        values = value if isinstance(value, list) else [] if value is None else [value]
        problem = next((found for v in values if (found := range_problem(action, v))), None)
        if problem is not None:
            got = str(value) if len(str(value)) <= 40 else f"{str(value)[:20]}..., {len(str(value))} digits"
            raise InputError(f"{where}: argument {action.option_strings[0]}: {problem} (got {got})")
