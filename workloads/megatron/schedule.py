"""One training step of one pipeline stage, in the order Megatron-LM's schedules run it.

The compute stream runs the tasks of the job's pipeline schedule (1F1B, or interleaved 1F1B
with virtual stages: :mod:`~simpy_astra.workloads.schedules.registry`) one after the other; a
task is one micro-batch through one model chunk, forward or backward (the backward first
recomputes what the recompute mode says). Communication runs on NCCL streams of its
own, one per communicator kind (``comm_stream`` in the trace: ``tp``, ``cp``, ``dp``,
``pp``), concurrent with compute and with each other:

- tensor-parallel collectives are waited for by the compute after them (the async input-
  gradient all-reduce and ``--tp-comm-overlap`` run beside the next GEMMs instead);
- pipeline receives are posted at once; the compute that reads one waits for it, and a send
  is waited for by the next task (Megatron's point-to-point calls are synchronous), except
  interleaved 1F1B's gradient sends under ``overlap_p2p_comm`` (Megatron-LM's default):
  each is waited after the stage's next backward, which runs beside it (its activation sends
  are waited at once, to free the output: ``deallocate_pipeline_outputs``);
- data-parallel gradient sync: with ``--DDP-impl torch`` or ``--overlap-grad-reduce``, a
  bucket's collective starts as soon as a chunk's last backward of the step (its last weight
  gradient, when the schedule splits backwards) has produced its gradients and runs beside the
  rest of the backward (a later 1F1B stage's after its last gradient send, with
  ``--align-grad-reduce``); otherwise one collective after the last backward. Megatron-Core's
  DDP zeroes the gradient buffer as the step starts and reads and scales each bucket before its
  collective, on the compute stream. The distributed optimizer reduce-scatters the gradients
  and all-gathers the updated parameters (before the first forward that reads them with
  ``--overlap-param-gather``, else after the optimizer step);
- with tied embeddings and pp > 1, the first and last stage all-reduce the word embedding's
  gradient before the optimizer step.
"""

from __future__ import annotations

import itertools
import math

from simpy_astra.workloads.chakra.types import MAX_SPLIT_WEIGHT
from simpy_astra.workloads.megatron.host_time import HostChain, TaskIssue, task_issue
from simpy_astra.workloads.megatron.job import LayerKind, MegatronJob
from simpy_astra.workloads.megatron.kernels import (
    Gpu,
    beside_seconds,
    sharing_sms,
    streaming_seconds,
)
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.linear_kernels import ALL_GATHER, ALL_REDUCE, BROADCAST, REDUCE_SCATTER
from simpy_astra.workloads.megatron.steps import Compute, GradsReady, HostSync, ParamsUsed, Step, Wait
from simpy_astra.workloads.schedules.task import Kind, Task
from simpy_astra.workloads.transformer.graph import COLL, COMP, RECV, SEND, Op, StageGraph

#: Adam's step per parameter: gradient read, fp32 master weight read and written, two moments
#: read and written, the half-precision copy written, and the gradient read again for the
#: norm (clipping) and the loss-scale check: 4 + 8 + 16 + 2 + 4 + 4 bytes
ADAM_BYTES_PER_PARAM = 38
#: one more read of the fp32 gradient: the norm's (``--clip-grad``), the loss-scale check's
GRADIENT_PASS_BYTES_PER_PARAM = 4
#: torch DDP's default bucket (25 MB) and Megatron's DDP bucket (40 M parameters)
TORCH_BUCKET_BYTES = 25 * 1024 * 1024
MEGATRON_BUCKET_PARAMS = 40_000_000


#: the part a communicator's exposed time is charged to, where it is not the communicator's
#: own name: the tied embedding's all-reduce syncs gradients; hierarchical context
#: parallelism's two levels are context parallelism
_STREAM = {"emb": "dp", "cp_a2a": "cp", "cp_p2p": "cp"}


class StageSchedule:
    """The op graph of one pipeline stage (every GPU of the stage runs it)."""

    def __init__(self, job: MegatronJob, gpu: Gpu, stage: int, tp_link_gb_s: float = 0.0):
        self.job = job
        self.gpu = gpu
        #: the rate a GPU's tensor-parallel collectives move bytes at (NVLink in a node, the
        #: rail across nodes), 10^9 B/s; 0: unknown (compute beside them pays for its whole length)
        self.tp_link_gb_s = tp_link_gb_s
        self.stage = stage
        self.g = StageGraph(stage)
        self.model = ChunkModel(job, gpu)
        self.tail: list[int] = []  # what the next compute step waits for
        self.beside: list[int] = []  # collectives running beside the next compute step
        self.dp_syncs: list[int] = []
        self.bucket_params: dict[str, int] = {"dp": 0, "edp": 0}
        self.gather_starts: dict[int, dict[int, int]] = {}  # chunk -> step index -> bucket
        self.gathers: dict[tuple[str, int], int] = {}  # (dim, place in the chain) -> its op
        self.gather_order: dict[str, list[tuple[int, int, int]]] = {}  # dim -> (chunk, bucket, bytes) in order
        self.gather_index: dict[tuple[str, int, int], int] = {}  # (dim, chunk, bucket) -> place in the chain
        self.chunks = job.virtual_stages
        self.cache: dict[tuple, list[Step]] = {}
        self.chunk = 0  # the model chunk whose task is being laid out
        self.gpu_us = 0  # the compute nodes' time so far (the GPU runs them one at a time)
        # id(steps) -> (steps, when the host issues each part between synchronisations)
        self.issues: dict[int, tuple[list[Step], list[tuple[int, TaskIssue]]]] = {}
        #: every task starts after a synchronisation with the GPU: 2021-2022's timers
        #: (``_Timer.start`` and ``stop`` call ``torch.cuda.synchronize``) around each forward
        #: and backward, and today's batched pipeline exchanges (``batch_p2p_sync``: every
        #: schedule but interleaved 1F1B's ``overlap_p2p_comm``)
        self.tasks_after_sync = job.legacy or (job.pp > 1 and not job.overlap_p2p_comm)

    # ------------------------------------------------------------------ ops
    def compute(self, name: str, seconds: dict[str, float]) -> None:
        """A compute node for the kernels in ``seconds`` (by kind: ``gemm``, ``attention``,
        ...); beside a collective (``self.beside``) it runs on the SMs the communication
        kernels leave it. Its ``op_type`` is the kind that takes longest; with more than one
        kind its ``kind_split`` says how long each takes, in their order (microseconds,
        rounded where the running sum falls), so that the breakdown charges each kind its own
        time without a node per kind (which would cost the simulation a node each)."""
        scale = self._beside_scale(sum(seconds.values())) if self.beside else 1.0
        untils_us = [(kind, round(elapsed_s * 1e6)) for kind, elapsed_s in
                     zip(seconds, itertools.accumulate(s * scale for s in seconds.values()), strict=True)]
        done_us = untils_us[-1][1]
        # a node past 2^31 us (36 min) counts its kinds in coarser units: past the bound the
        # breakdown read no split and charged the whole node to its longest kind
        unit_us = -(-done_us // MAX_SPLIT_WEIGHT) or 1
        split, done = [], 0
        for kind, until_us in untils_us:
            if until_us // unit_us > done:
                split.append(f"{kind}:{until_us // unit_us - done}")
                done = until_us // unit_us
        op = Op(name, COMP, list(self.tail), [], [], op_type=max(seconds, key=seconds.__getitem__),
                duration_us=max(1, done_us), kind_split=",".join(split) if len(split) > 1 else "")
        self.tail = [self.g.add(op), *self.beside]
        self.beside = []
        self.gpu_us += op.duration_us

    def _beside_scale(self, compute_s: float) -> float:
        """How much longer compute runs beside ``self.beside``'s collectives. NCCL's kernels
        hold their SMs while the collective runs: a tensor-parallel one moves its ring's bytes
        (``tp - 1`` shards; an all-reduce twice that) at ``tp_link_gb_s``. Transformer Engine's
        overlap (``--tp-comm-overlap``) runs its GEMMs on fewer SMs throughout, and the other
        groups' collectives (data-parallel buckets across nodes) outlast the compute beside
        them: both keep the whole-length cost, as does an unknown link rate."""
        job = self.job
        if compute_s <= 0 or not self.tp_link_gb_s or job.tp_comm_overlap:
            return sharing_sms(self.gpu, 1.0)
        window_s = 0.0
        for gid in self.beside:
            op = self.g.ops[gid]
            if op.dim != "tp":
                return sharing_sms(self.gpu, 1.0)
            # a broadcast's ring passes the whole buffer once through each GPU
            shards = {ALL_GATHER: job.tp - 1, BROADCAST: 1}.get(op.comm_type, (job.tp - 1) / job.tp)
            window_s = max(window_s, op.comm_size * shards * (2 if op.comm_type == ALL_REDUCE else 1)
                           / (self.tp_link_gb_s * 1e9))
        return beside_seconds(self.gpu, compute_s, window_s) / compute_s

    def collective(self, name: str, comm_type: int, dim: str, size: int, block: bool = True,
                   deps: list[int] | None = None) -> int:
        """A collective node. A broadcast also records the ``duration_micros`` a run replays
        where NCCL's model does not time it (as ASTRA-sim replays one): its bytes once over
        the tp ring's link, NCCL's ring pipelining them (at least 1 us; 0, no duration, where
        the rate is unknown). Only tp's link rate is known (and only tp broadcasts are written):
        a broadcast on another dimension is refused rather than given tp's time."""
        if comm_type == BROADCAST and dim != "tp":
            raise ValueError(f"broadcast '{name}' over {dim}: a broadcast's replayed time is known on tp's link "
                             f"alone (tp_link_gb_s); give its dimension's link rate to time it")
        duration_us = 0
        if comm_type == BROADCAST and self.tp_link_gb_s:
            duration_us = max(1, round(size / (self.tp_link_gb_s * 1e3)))
        op = Op(name, COLL, list(self.tail if deps is None else deps), [], [], comm_type=comm_type,
                comm_size=size, dim=dim, stream=_STREAM.get(dim, dim), duration_us=duration_us)
        gid = self.g.add(op)
        if block:
            self.tail = [gid]
        return gid

    def _tag(self, mb: int, boundary: int, backward: bool) -> int:
        """Unique per (micro-batch, chunk boundary, direction), equal on both ends."""
        return 1 + 2 * (mb * self.job.pp * self.chunks + boundary) + int(backward)

    def send(self, name: str, size: int, peer: int, tag: int, block: bool = True) -> int:
        op = Op(name, SEND, list(self.tail), [], [], comm_size=size, peer_stage=peer, tag=tag, stream="pp")
        gid = self.g.add(op)
        if block:
            self.tail = [gid]
        return gid

    def recv(self, name: str, size: int, peer: int, tag: int) -> None:
        op = Op(name, RECV, [], [], [], comm_size=size, peer_stage=peer, tag=tag)
        self.tail.append(self.g.add(op))
        job = self.job
        if job.legacy and job.scatter_gather and job.tp > 1 and not job.sequence_parallel:
            self.collective(f"{name}.allgather", ALL_GATHER, "tp", size)  # rebuild the activation

    def steps(self, prefix: str, steps: list[Step], sync_grads: bool, gather_chunk: int | None = None) -> None:
        """Ops for ``steps``: compute steps that only a gradient or parameter marker separates
        run as one node unless that marker starts a bucket's sync (``sync_grads``) or a
        bucket's parameters (the chunk's first forward under ``--overlap-param-gather``). A
        :class:`Wait` ends the compute that runs beside the collectives before it: what
        follows waits for them and has every SM again. Each compute node and collective also
        waits for the host to enqueue it (:class:`HostChain`), and the task's end for the
        host to have issued it all; at a :class:`HostSync` the host waits for the GPU and
        starts a chain again, its first launch charged, as at the start of a task that
        follows one of Megatron's synchronisations (:attr:`tasks_after_sync`)."""
        pending: dict[str, float] = {}
        name = prefix
        cached = self.issues.get(id(steps))
        if cached is None or cached[0] is not steps:  # the cached lists are laid out again each task
            cached = self.issues[id(steps)] = (steps, self._segment_issues(steps))
        segments = cached[1]
        lo, issue = segments[0]
        host = HostChain(self.g, prefix, self.tail)
        gpu_start_us = self.gpu_us
        enqueued_s = 0.0  # when the first kernel of what is pending is enqueued

        def flush() -> None:
            self.tail += host.gate(enqueued_s, self.gpu_us - gpu_start_us)
            self.compute(name, pending)
            pending.clear()

        starts = self.gather_starts.get(gather_chunk, {}) if gather_chunk is not None else {}
        for i, step in enumerate(steps):
            if isinstance(step, HostSync):  # the host waits for all it issued, then goes on
                if pending:
                    flush()
                self.tail += self.beside + host.gate(issue.done_s, self.gpu_us - gpu_start_us)
                self.beside = []
                lo, issue = next(seg for seg in segments if seg[0] == i + 1)
                host = HostChain(self.g, f"{prefix}.{i}.{step.label}", self.tail)
                gpu_start_us = self.gpu_us
                continue
            if isinstance(step, ParamsUsed):
                if i in starts:
                    if pending:
                        flush()
                    # the module's pre-hook dispatches the next gather from the host
                    reached = host.gate(issue.reached_s[i - lo], self.gpu_us - gpu_start_us)
                    self._bucket_needed(gather_chunk, step.dim, starts[i], reached)
                continue
            if isinstance(step, GradsReady) and not sync_grads:
                continue
            if isinstance(step, Wait):
                if pending:
                    flush()
                self.tail += self.beside
                self.beside = []
                continue
            if isinstance(step, Compute):
                if not pending:
                    enqueued_s = issue.enqueued_s[i - lo] or 0.0
                for kind, seconds in step.seconds.items():
                    pending[kind] = pending.get(kind, 0.0) + seconds
                name = f"{prefix}.{i}.{step.label}"
                continue
            if pending:
                flush()
            name = f"{prefix}.{i}.{step.label}"
            if isinstance(step, GradsReady):
                self._grads_ready(name, step.params, step.dim)
            else:
                gate = host.gate(issue.enqueued_s[i - lo] or 0.0, self.gpu_us - gpu_start_us)
                gid = self.collective(name, step.comm_type, step.dim, step.size_bytes, block=not step.overlap,
                                      deps=self.tail + gate)
                if step.overlap:
                    self.beside.append(gid)
        if pending:
            flush()
        if self.beside:  # nothing after it to run beside: the next task waits for it
            self.tail += self.beside
            self.beside = []
        self.tail += host.gate(issue.done_s, self.gpu_us - gpu_start_us)

    def _segment_issues(self, steps: list[Step]) -> list[tuple[int, TaskIssue]]:
        """``steps`` cut at each :class:`HostSync`: each part's first index and when the host
        issues it, the first launch charged after a synchronisation."""
        cuts = [i for i, step in enumerate(steps) if isinstance(step, HostSync)]
        bounds = zip([0, *(c + 1 for c in cuts)], [*cuts, len(steps)], strict=True)
        return [(lo, task_issue(steps[lo:hi], after_sync=lo > 0 or self.tasks_after_sync))
                for lo, hi in bounds]

    # ------------------------------------------------------------------ parameter gather
    def _bucket_limit(self, chunk: int) -> float:
        """Parameters per bucket: torch DDP's 25 MB (2021), else ``--ddp-bucket-size`` or
        Megatron-Core's ``max(40M, 1M x data-parallel size)`` (``resolve_ddp_bucket_size``); Megatron-Core turns bucketing off (one bucket
        for the whole chunk) on every pipeline stage but the first and for every model chunk
        but the first, whose data-parallel traffic it takes to be off the critical path
        (``DistributedDataParallel.__init__``: ``pp_rank > 0`` or ``disable_bucketing``)."""
        job = self.job
        if job.legacy:
            return TORCH_BUCKET_BYTES // self.job.grad_bytes if job.ddp == "torch" else MEGATRON_BUCKET_PARAMS
        if self.stage > 0 or chunk > 0:
            return math.inf
        return job.ddp_bucket_params or max(MEGATRON_BUCKET_PARAMS, 1_000_000 * job.dp * job.cp)

    def _plan_gathers(self, chunk: int, steps: list[Step]) -> None:
        """Buckets of the chunk's parameters (the gradient buckets: filled in the backward's
        order, gathered in the forward's) in the order the forward reads them. Megatron-Core
        (``DistributedOptimizer``, r0.8; ``finish_param_sync`` today) launches the first
        bucket's all-gather when the step starts (``zero_grad``) and each next one only when
        the forward reaches the bucket before it (its pre-hook waits there, then dispatches the
        next: one gather in flight, so they never queue ahead of the compute kernels); the
        chain runs on over the model chunks in order. What stays exposed is the first bucket
        and every bucket whose gather outlasts the forward over the bucket before it."""
        limit, starts, sizes = self._bucket_limit(chunk), {}, {}
        for dim in ("dp", "edp"):
            used = [(i, step.params, self._gathered_bytes(step.params, step.fp8)) for i, step in enumerate(steps)
                    if isinstance(step, ParamsUsed) and step.dim == dim and self._replicas(dim) > 1]
            groups: list[list[int]] = []  # [first step that reads it, parameters, bytes], filled backward
            full = True
            for i, params, size in reversed(used):  # Megatron fills buckets in the backward's order
                if full:
                    groups.append([i, 0, 0])
                groups[-1][0] = i
                groups[-1][1] += params
                groups[-1][2] += size
                full = groups[-1][1] >= limit
            for k, (i, _params, size) in enumerate(reversed(groups)):
                starts[i] = k
                sizes.setdefault(dim, []).append(size)
        self.gather_starts[chunk] = starts
        for dim, buckets in sizes.items():
            order = self.gather_order.setdefault(dim, [])
            for k, size in enumerate(buckets):
                self.gather_index[(dim, chunk, k)] = len(order)
                order.append((chunk, k, size // self._replicas(dim)))
        for dim, order in self.gather_order.items():
            if order and (dim, 0) not in self.gathers:
                self._dispatch_gather(dim, 0, [])

    def _gathered_bytes(self, params: int, fp8: int) -> int:
        """Bytes of ``params`` weights in the parameter all-gather, ``fp8`` of them Transformer
        Engine's linear weights: one byte each with ``--fp8-param-gather``, else the training
        precision's."""
        job = self.job
        return (params - fp8) * job.element_bytes + fp8 if job.fp8_param_gather else params * job.element_bytes

    def _dispatch_gather(self, dim: str, index: int, deps: list[int]) -> None:
        chunk, k, size = self.gather_order[dim][index]
        self.gathers[(dim, index)] = self.collective(f"chunk{chunk}.{dim}.bucket{k}.params.allgather", ALL_GATHER,
                                                     dim, size, block=False, deps=deps)

    def _bucket_needed(self, chunk: int, dim: str, k: int, host: list[int]) -> None:
        """The forward reaches bucket ``k``: it waits for its gather, then launches the next,
        once the host has reached the module's forward pre-hook (``host``: the host chain's
        node there, if the GPU could be there sooner). Megatron-Core's hook
        (``_make_forward_pre_hook``) runs ``finish_param_sync``, whose wait is the stream's
        and which then dispatches the next bucket's all-gather (``param_and_grad_buffer.py``):
        the host's work before the module, ``get_batch``'s for the embedding's, comes first."""
        index = self.gather_index[(dim, chunk, k)]
        self.tail.append(self.gathers[(dim, index)])
        if index + 1 < len(self.gather_order[dim]):
            self._dispatch_gather(dim, index + 1, [*self.tail, *host])

    # ------------------------------------------------------------------ gradient sync
    def _sync_kind(self) -> int:
        return REDUCE_SCATTER if self.job.distributed_optimizer else ALL_REDUCE

    def _replicas(self, dim: str) -> int:
        job = self.job
        return job.dp * job.cp // (job.ep if dim == "edp" else 1)

    def _grads_ready(self, name: str, params: int, dim: str) -> None:
        """In a chunk's last backward of the step, with overlapped sync: a full bucket starts."""
        self.bucket_params[dim] += params
        if self.bucket_params[dim] >= self._bucket_limit(self.chunk):
            self._flush_bucket(name, dim)

    def _flush_bucket(self, name: str, dim: str) -> None:
        if self.bucket_params[dim] and self._replicas(dim) > 1:
            self._prepare_grads(f"{name}.{dim}", self.bucket_params[dim])
            self.dp_syncs.append(self.collective(f"{name}.{dim}.sync", self._sync_kind(), dim,
                                                 self.bucket_params[dim] * self.job.grad_bytes, block=False))
        self.bucket_params[dim] = 0

    def _prepare_grads(self, name: str, params: int) -> None:
        """Megatron-Core's ``start_grad_sync`` on a bucket of ``params`` gradients, on the compute
        stream before its collective: the bucket's norm for the NaN check, one read, and its
        scaling by 1/(dp x cp) in place, a read and a write (each as the job says it runs)."""
        job = self.job
        seconds = streaming_seconds(self.gpu, params * job.grad_bytes) if job.grad_nan_check else 0.0
        if job.grad_scaling:
            seconds += streaming_seconds(self.gpu, 2 * params * job.grad_bytes)
        if seconds:
            self.compute(f"{name}.prepare", {"elementwise": seconds})

    # ------------------------------------------------------------------ parameters
    def _layer_kinds(self, chunk: int) -> tuple[LayerKind, ...]:
        """The chunk's layers: mixtures of experts or not, and each one's context-parallel
        exchange (chunks of the same kinds share their steps: the cache's key)."""
        return self.job.chunk_kinds(self.stage, chunk)

    def chunk_grads(self, chunk: int) -> dict[str, int]:
        """Parameters of the chunk on this GPU by the group that syncs their gradients (``dp``,
        or ``edp`` for experts); the embedding, the final norm and the untied output layer are
        ``dp``'s."""
        job = self.job
        out = {"dp": 0, "edp": 0}
        for layer in self._layer_kinds(chunk):
            for params, dim in self.model.layer_grads(layer.moe):
                out[dim] += params
        place = job.chunk_place(self.stage, chunk)
        out["dp"] += job.embedding_params * place.first + job.output_params * place.last
        return out

    def chunk_params(self, chunk: int) -> int:
        return sum(self.chunk_grads(chunk).values())

    def stage_params(self) -> int:
        return sum(self.chunk_params(c) for c in range(self.chunks))

    # ------------------------------------------------------------------ the step
    def _chunk_steps(self, kind: Kind, chunk: int) -> list[Step]:
        job = self.job
        place = job.chunk_place(self.stage, chunk)
        first, last = place.first, place.last
        layers = self._layer_kinds(chunk)
        key = (kind, first, last, layers)
        if key not in self.cache:
            if kind is Kind.FORWARD:
                self.cache[key] = self.model.forward(layers, first, last)
                return self.cache[key]
            recomputed = layers if job.recompute_method == "uniform" else layers[:job.recompute_layers]
            again = self.model.recompute(recomputed)
            if kind is Kind.BACKWARD:
                self.cache[key] = again + self.model.backward(layers, first, last)
            else:  # the input gradient needs what is recomputed; the weight gradient runs later
                inputs, weights = self.model.backward_split(layers, first, last)
                self.cache[(Kind.BACKWARD_INPUT, first, last, layers)] = again + inputs
                self.cache[(Kind.BACKWARD_WEIGHT, first, last, layers)] = weights
        return self.cache[key]

    def tasks(self) -> list[Task]:
        """This stage's tasks in the job's schedule: whole backwards, or split into the input
        gradient (what the previous stage waits for) and the weight gradient."""
        return self.job.stage_order(self.stage)

    def build(self) -> StageGraph:
        job = self.job
        chunks = self.chunks
        overlapped_sync = job.overlap_grad_reduce
        if job.distributed_optimizer and job.overlap_param_gather:
            for c in range(chunks):
                self._plan_gathers(c, self._chunk_steps(Kind.FORWARD, c))
        act = job.micro_batch * job.seq // job.cp * job.hidden * job.element_bytes
        if job.sequence_parallel or (job.legacy and job.scatter_gather):
            act //= job.tp
        if job.grad_buffer_zeroed:  # zero_grad_buffer: the stage's whole buffer, before the first forward
            self.compute("grads.zero", {"elementwise": streaming_seconds(self.gpu, self.stage_params() * job.grad_bytes)})
        started: set[int] = set()
        tasks = self.tasks()
        last_grads = {t.chunk: i for i, t in enumerate(tasks) if t.kind in (Kind.BACKWARD, Kind.BACKWARD_WEIGHT)}
        # overlap_p2p_comm: the gradient send in flight, waited after the next backward
        # (``pp_post_backward`` in Megatron-Core's interleaved schedule) or at the step's end
        async_grad_sends = job.async_gradient_sends
        in_flight: list[int] = []
        for index, task in enumerate(tasks):
            kind, mb, chunk = task
            place = job.chunk_place(self.stage, chunk)
            g = place.index
            # the stages of the chunks before and after this one, as offsets (0: none, or this
            # stage's own other chunk, handed over in memory at a V's turn)
            nxt = 0 if place.last else job.stage_of(g + 1) - self.stage
            prv = 0 if place.first else job.stage_of(g - 1) - self.stage
            p = f"{kind.value}{mb}.c{chunk}"
            self.chunk = chunk
            if kind is Kind.FORWARD:
                gather = chunk if chunk not in started and chunk in self.gather_starts else None
                started.add(chunk)
                if prv:
                    self.recv(f"{p}.recv_activation", act, prv, self._tag(mb, g - 1, False))
                self.steps(p, self._chunk_steps(Kind.FORWARD, chunk), False, gather)
                if nxt:
                    self.send(f"{p}.send_activation", act, nxt, self._tag(mb, g, False))
            else:
                inputs = kind is not Kind.BACKWARD_WEIGHT
                if inputs and nxt:
                    self.recv(f"{p}.recv_gradient", act, nxt, self._tag(mb, g, True))
                # the chunk's last gradients of the step: its buckets sync as they fill
                final = overlapped_sync and kind is not Kind.BACKWARD_INPUT and last_grads[chunk] == index
                self.steps(p, self._chunk_steps(kind, chunk), final)
                # align_grad_reduce: a later stage of 1F1B syncs after its last send (r0.8's
                # forward_backward_pipelining_without_interleaving: "Launch any remaining grad reductions")
                late = final and job.align_grad_reduce and self.stage > 0 and chunks == 1
                if final and not late:
                    for dim in ("dp", "edp"):
                        self._flush_bucket(p, dim)
                self.tail += in_flight
                in_flight = []
                if inputs and prv:
                    gid = self.send(f"{p}.send_gradient", act, prv, self._tag(mb, g - 1, True),
                                    block=not async_grad_sends)
                    if async_grad_sends:
                        in_flight = [gid]
                if late:
                    for dim in ("dp", "edp"):
                        self._flush_bucket(p, dim)
        self.tail += in_flight
        self._finish_step()
        return self.g

    def _finish_step(self) -> None:
        job = self.job
        params = self.stage_params()
        replicas = job.dp * job.cp
        if not job.overlap_grad_reduce:
            for dim in ("dp", "edp"):
                grads = sum(self.chunk_grads(c)[dim] for c in range(self.chunks))
                if grads and self._replicas(dim) > 1:
                    self._prepare_grads(f"grads.{dim}", grads)
                    self.collective(f"grads.{dim}.sync", self._sync_kind(), dim, grads * self.job.grad_bytes)
        self.tail += self.dp_syncs
        if job.tied_embeddings and job.last_stage != 0 and self.stage in (0, job.last_stage):
            self.collective("embedding.grads.allreduce", ALL_REDUCE, "emb",
                            job.hidden * job.vocab // job.tp * self.job.grad_bytes)
        self.compute("optimizer.step", {"optimizer": self.optimizer_step_seconds()})
        if job.distributed_optimizer and replicas > 1 and not job.overlap_param_gather:
            self.collective("params.dp.allgather", ALL_GATHER, "dp",
                            self._gathered_bytes(params, self._fp8_params()) // replicas)

    def optimizer_step_seconds(self) -> float:
        """The optimizer step of this stage's parameters (its shard of them with the distributed
        optimizer): one streaming pass over their states, gradients and weights."""
        job = self.job
        params = self.stage_params()
        shard = params // (job.dp * job.cp) if job.distributed_optimizer else params
        extra = 6 if self.job.grad_bytes == 2 else 0  # fp16 / bf16 gradients made fp32 for the optimizer
        # fp8: Transformer Engine casts each weight to fp8 (both layouts) once a step, in
        # the first micro-batch, reading 2 B and writing 2 x 1 B a parameter (current
        # scaling reads it once more first, for its amax)
        weights = params * (6 if job.fp8_current_scaling else 4) if job.fp8 else 0
        fp8 = self._fp8_params()
        if fp8:  # the optimizer writes the FP8 weights; Transformer Engine makes their transpose
            weights = 2 * fp8
        return streaming_seconds(self.gpu, shard * (self._step_bytes_per_param() + extra) + weights)

    def _fp8_params(self) -> int:
        """The weights the forward reads that ``--fp8-param-gather`` keeps in FP8 (0 without it)."""
        if not self.job.fp8_param_gather:
            return 0
        return sum(step.fp8 for c in range(self.chunks) for step in self._chunk_steps(Kind.FORWARD, c)
                   if isinstance(step, ParamsUsed))

    def _step_bytes_per_param(self) -> int:
        """HBM bytes the optimizer step moves for each parameter of its shard: Adam's
        :data:`ADAM_BYTES_PER_PARAM` with the job's master copy and moments, each read and
        written (SGD's one momentum buffer, none without momentum; the precision-aware
        optimizer's narrower ones), less a gradient pass for the norm without clipping and
        one for the inf/nan check without a grad scaler (``MixedPrecisionOptimizer.step``)."""
        job = self.job
        skipped = (not job.grad_norm) + (not job.gradient_check)
        narrower = 2 * (4 - job.master_bytes) + 2 * (8 - sum(job.moment_bytes))
        return ADAM_BYTES_PER_PARAM - narrower - GRADIENT_PASS_BYTES_PER_PARAM * skipped


def build_stage(job: MegatronJob, gpu: Gpu, stage: int, tp_link_gb_s: float = 0.0) -> StageGraph:
    return StageSchedule(job, gpu, stage, tp_link_gb_s).build()
