"""Megatron-LM's rules for splitting the layers over pipeline stages and model chunks: the even
split (with the embedding and the loss counted as layers when asked), the uneven first and
last stages, ``--pipeline-model-parallel-layout``, and interleaving's stage count; each
restated with Megatron's reason (:mod:`~simpy_astra.workloads.megatron.rules`)."""

from __future__ import annotations

import argparse

from simpy_astra.errors import refuse
from simpy_astra.workloads.megatron import pipeline_layout


def virtual_stages(a: argparse.Namespace) -> int:
    """Model chunks per pipeline stage as Megatron derives them (1: plain 1F1B)."""
    pp = a.pipeline_model_parallel_size
    if a.pipeline_model_parallel_layout is not None:
        return max(1, len(pipeline_layout.chunks(a.pipeline_model_parallel_layout)) // pp)
    if a.num_layers_per_virtual_pipeline_stage:
        return max(1, _split_layers(a) // pp // a.num_layers_per_virtual_pipeline_stage)
    return a.virtual_pipeline_model_parallel_size or 1


def _split_layers(a: argparse.Namespace) -> int:
    """The layers the even split shares out: the model's, plus the embedding and the loss
    when they count as layers."""
    return a.num_layers + a.account_for_embedding_in_pipeline_split + a.account_for_loss_in_pipeline_split


def check(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    """Refuse the stage split and interleaving Megatron-LM refuses of ``a``."""
    pp = a.pipeline_model_parallel_size
    per, chunks = a.num_layers_per_virtual_pipeline_stage, a.virtual_pipeline_model_parallel_size
    layout = a.pipeline_model_parallel_layout
    if (per is not None) + (chunks is not None) + (layout is not None) > 1:
        refuse(where, "one way to interleave",
               "give one of --num-layers-per-virtual-pipeline-stage, --virtual-pipeline-model-parallel-size "
               "(--num-virtual-stages-per-pipeline-rank) and --pipeline-model-parallel-layout (Megatron: no more "
               "than one of them can be set at the same time)")
    if layout is not None:
        _layout_string(a, where)
    elif a.decoder_first_pipeline_num_layers is not None or a.decoder_last_pipeline_num_layers is not None:
        _uneven(a, where)
    else:
        _even(a, where)
    if virtual_stages(a) == 1:
        return
    legacy = a.ddp_impl is not None or a.no_overlap_p2p_communication
    if pp < (3 if legacy else 2):
        why = ("with --DDP-impl (2021) or --no-overlap-p2p-communication, pipeline-model-parallel size should be "
               "greater than 2" if legacy else "pipeline-model-parallel size should be greater than 1")
        refuse(where, "interleaving needs pipeline stages",
               f"interleaved 1F1B with --pipeline-model-parallel-size {pp} (Megatron: when the interleaved "
               f"schedule is used, {why})")


def _even(a: argparse.Namespace, where: str) -> None:
    """The even split, with the embedding and the loss counted as layers when asked."""
    pp, per, chunks = a.pipeline_model_parallel_size, a.num_layers_per_virtual_pipeline_stage, \
        a.virtual_pipeline_model_parallel_size
    layers, counted = _split_layers(a), _split_layers(a) - a.num_layers
    what = f"--num-layers {a.num_layers}" + (f" plus {counted} (embedding/loss counted as layers)" if counted else "")
    if layers % pp:
        refuse(where, "layers divisible by pp",
               f"{what} is not a multiple of --pipeline-model-parallel-size {pp} (Megatron: number of layers "
               f"should be divisible by the pipeline-model-parallel size)")
    if per and (layers // pp) % per:
        refuse(where, "stage layers divisible by chunk layers",
               f"--num-layers-per-virtual-pipeline-stage {per} does not divide the {layers // pp} layers of a "
               f"pipeline stage (Megatron: number of layers per pipeline stage must be divisible by the number "
               f"of layers per virtual pipeline stage)")
    if chunks and (layers // pp) % chunks:
        refuse(where, "stage layers divisible by chunks",
               f"--virtual-pipeline-model-parallel-size {chunks} does not divide the {layers // pp} layers of a "
               f"pipeline stage (Megatron: num_layers_per_pipeline_rank should be divisible by vp_size; each "
               f"model chunk holds the same number of layers)")


def _uneven(a: argparse.Namespace, where: str) -> None:
    """``--decoder-first/last-pipeline-num-layers`` (Megatron-Core's ``TransformerConfig``)."""
    first, last = a.decoder_first_pipeline_num_layers, a.decoder_last_pipeline_num_layers
    if a.account_for_embedding_in_pipeline_split or a.account_for_loss_in_pipeline_split:
        refuse(where, "uneven stages or embedding/loss in the split",
               "--decoder-first/last-pipeline-num-layers with --account-for-embedding/loss-in-pipeline-split "
               "(Megatron: num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage cannot be set "
               "at the same time with account_for_embedding_in_pipeline_split and "
               "account_for_loss_in_pipeline_split)")
    if a.num_layers_per_virtual_pipeline_stage:
        refuse(where, "uneven stages take a chunk count",
               "--decoder-first/last-pipeline-num-layers with --num-layers-per-virtual-pipeline-stage (Megatron: "
               "please use --num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel degree "
               "when enable uneven pipeline parallelism)")
    vp = a.virtual_pipeline_model_parallel_size if a.pipeline_model_parallel_size > 1 else None
    middle, stages = a.num_layers, a.pipeline_model_parallel_size
    for name, n in (("first", first), ("last", last)):
        if n is None:
            continue
        if vp and n % vp:
            refuse(where, f"{name} stage layers divisible by chunks",
                   f"--decoder-{name}-pipeline-num-layers {n} is not a multiple of --virtual-pipeline-model-"
                   f"parallel-size {vp} (Megatron: number of layers at {name} stage must be divisible by "
                   f"virtual pipeline parallel degree)")
        middle, stages = middle - n, stages - 1
    if bool(middle) != bool(stages) or middle < 0:
        refuse(where, "middle layers for middle stages",
               f"--decoder-first/last-pipeline-num-layers leave {middle} layers for {stages} middle stages "
               f"(Megatron: you either have middle pp stages and layers or none of them)")
    if stages and middle % stages:
        refuse(where, "middle layers divisible by middle stages",
               f"the {middle} layers left by --decoder-first/last-pipeline-num-layers do not split over the "
               f"{stages} middle stages (Megatron: number of layers at middle stage must be divisible by the "
               f"middle pipeline model parallel size)")
    if stages and vp and (middle // stages) % vp:
        refuse(where, "middle stage layers divisible by chunks",
               f"the {middle // stages} layers of each middle stage do not split over --virtual-pipeline-model-"
               f"parallel-size {vp} (Megatron: number of layers on each middle pipeline rank must be divisible "
               f"by virtual pipeline parallel degree)")


def _layout_string(a: argparse.Namespace, where: str) -> None:
    """``--pipeline-model-parallel-layout`` (Megatron-Core's ``PipelineParallelLayerLayout``)."""
    layout, pp = a.pipeline_model_parallel_layout, a.pipeline_model_parallel_size
    if (a.decoder_first_pipeline_num_layers is not None or a.decoder_last_pipeline_num_layers is not None
            or a.account_for_embedding_in_pipeline_split or a.account_for_loss_in_pipeline_split):
        refuse(where, "a layout or other layout arguments",
               "--pipeline-model-parallel-layout with --decoder-first/last-pipeline-num-layers or "
               "--account-for-embedding/loss-in-pipeline-split (Megatron: pipeline_model_parallel_layout cannot "
               "be set with other pipeline layout arguments)")
    try:
        chunks = pipeline_layout.chunks(layout)
    except pipeline_layout.LayoutTooLong as exc:
        refuse(where, "a layout of a model's size", f"--pipeline-model-parallel-layout {exc}; a layout names "
               f"each of the model's --num-layers {a.num_layers} once")
    for chunk in chunks:
        for c in chunk:
            if c not in pipeline_layout.LAYER_CHARACTERS:
                refuse(where, "layout characters",
                       f"--pipeline-model-parallel-layout {layout!r}: {c!r} in chunk {chunk!r} (Megatron: invalid "
                       f"layer character; known layer characters: E, L, t, m)")
    if len(chunks) % pp:
        refuse(where, "layout chunks divisible by pp",
               f"--pipeline-model-parallel-layout {layout!r} has {len(chunks)} chunks, not a multiple of "
               f"--pipeline-model-parallel-size {pp} (Megatron: the length of pipeline_model_parallel_layout "
               f"must be divisible by pipeline_model_parallel_size)")
    model = "".join(chunks)
    if not model.startswith("E") or not model.endswith("L") or model.count("E") != 1 or model.count("L") != 1:
        refuse(where, "layout has one embedding first and one loss last",
               f"--pipeline-model-parallel-layout {layout!r} (Megatron: the first layer must be embedding and the "
               f"last loss, each specified exactly once)")
    if model.count("t") != a.num_layers:
        refuse(where, "layout layers match --num-layers",
               f"--pipeline-model-parallel-layout {layout!r} has {model.count('t')} transformer layers, "
               f"--num-layers {a.num_layers} (Megatron: number of decoder layers must match num_layers)")
    if "m" in model:
        refuse(where, "layout without multi-token prediction",
               f"--pipeline-model-parallel-layout {layout!r} places multi-token prediction layers (m) without "
               f"--mtp-num-layers (Megatron: number of mtp layers in layout must match mtp_num_layers)")
