"""Packet backend: messages cut into packets, pipelined across hops, links shared round robin
over their inputs, output buffers that fill and drain, lossless credit back-pressure --
simulated as packet trains, so that time costs events only when the sharing of a link or
the state of a buffer changes, never per packet.

What is modelled (beyond ASTRA-sim, whose congestion-aware model moves whole messages
store-and-forward):

* a message of ``S`` bytes is a train of packets of ``packet-size`` bytes (the last one
  shorter); every directed link serialises one packet at a time at its bandwidth ``B`` and
  the packet then propagates for the link's latency; a device forwards a packet as soon as it
  has received it (per-packet store-and-forward, i.e. pipelined across hops), so one message
  alone over ``h`` hops takes ``h*latency + S/B + (h-1)*P/B`` (``P = min(packet-size, S)``;
  with unequal links ``sum(latency_i + P/B_i) + (S-P)/min(B_i)``);
* every directed link is a :class:`Port`, a SimPy resource
  (:class:`~simpy_astra.network.link_resource.LinkResource`, shared with the congestion-aware
  backend's links): a train joining the link is a request (:meth:`Port.request`), leaving it
  a release (:meth:`Port.release`); ``yield port.put(n)`` is background traffic on it. Each
  port is a SimPy process too (``port.process``): it takes the ``put()`` requests queued on
  it and starts each as a train, and after a change of speed has its trains re-shared;
* an output port serves its *inputs* (the links that feed it, and the device's own
  injection) in round robin; the injection input interleaves its trains evenly, and a
  transit input, being one FIFO, serves its trains in proportion to the rates they arrive
  at (a train already cut upstream gets less than one arriving at its injection share; ``m``
  trains arriving equally fast among ``n`` inputs get ``B/(n*m)`` each); a train or an input
  that cannot use its share (it is slower elsewhere) leaves the rest to the others
  (hierarchical max-min fairness, weighted within an input: :mod:`.solver`). The sharing is
  work-conserving: no link with bytes waiting for it and credits to send them stays idle,
  also where flows hold one another back in a cycle of ports (a ring on which every flow is
  a transit flow at its other ports: each port's transit part would freeze them all while
  the injection parts they were kept for went unused; they are raised together until a
  port they cross is saturated, :func:`.solver.max_min`) -- but for a train held by
  credits whose tightest port lies beyond its full buffer (below). The arrival
  rates are those FIFO inputs with unbounded buffers pass on hop by hop, to a fixed point
  (:func:`.solver.fifo_arrivals`); a train cut at several inputs moves at its own rate on
  each hop from its buffer on, and the bytes that crossed each of those hops are tracked, so
  a hop whose queue is empty passes on no more than reaches it and a drained train lets go
  of the hops its bytes have crossed;
* every output port of a forwarding device (a switch, or an NPU on a multi-hop route) has a
  buffer of ``switch-buffer`` bytes, kept by that device's SimPy process
  (:class:`SwitchProcess`, ``network.switches[device].process``), which has each of its
  ports measure and time its buffer (:meth:`Port.look_at_buffer`,
  :meth:`Port.arm_buffer_timer`). A train whose tightest port
  is such a port, and whose upstream links could carry it faster, fills that buffer at
  ``in - out``: upstream it runs at its own share of the upstream links, downstream at its
  share of the port. When the buffer is full, credits hold the trains that were filling it
  to their downstream rate (the one event of the fill instant, then a re-share); when a
  train's backlog can leave faster than it arrives, the buffer drains, and the train is
  whole again once its backlog is empty (one event). A buffer's occupancy is the bytes
  waiting at its own port (a train's bytes that went on and wait at a later hop, where FIFO
  inputs cut it hop by hop, are not in it); the largest queue per port is this occupancy;
* the link into a buffer sends only against credits for it, returned one latency after a
  packet leaves: a buffer smaller than the credit loop's bandwidth-delay product
  ``B*(2*latency) + P`` caps each train crossing that link at ``switch-buffer /
  (2*latency + P/B)`` (per train, not per link: several trains into one small buffer may
  together send more than the cap, where a real credit loop would hold their sum).

How it is simulated: a flow (one message, or one of its sprayed parts) is a *train*. While
the trains on a set of links and the states of their buffers do not change, round robin
with credits gives every train constant rates: one on the hops before its buffer (if it
is filling or draining one), one from there on (or one per hop from there on, where FIFO
inputs cut it at several). A train costs one event when its last byte leaves the source,
one for its delivery (``tail`` later: the last packet crossing the remaining hops), and,
only when it is congested, the buffer's fill and empty instants, the instants its
bytes waiting at a later hop run out, and the instants its head reaches a hop whose port
it would saturate (the start-up: until then it takes no share there).
Rates are re-shared -- only among the trains that transitively share links with the ones
that changed, and once for all the changes of one instant (one event) -- when a train starts
or ends, a buffer fills or empties, or a link changes speed. An uncontended message is two
events whatever its size; runtime grows with contention, not with bytes. After every
solve, the switch process of each port that holds a backlog is woken (its event): it has
the port sum the backlogs into its occupancy, record the largest, and arm its timer for the
next fill or empty instant, at which the process wakes again and hands the instant to the
network, which re-shares.

Approximations that this buys, and only these:

* a train reaches hop ``k`` of its path when its head gets there, ``o_k = sum over j < k
  of (latency_j + P/B_j)`` after its start (the head's packet crosses every link before at
  full speed), and takes that hop's share only from then; it is credited there with what
  crossed the hop before (the bytes in flight between them, charged in the delivery time as
  the head's way) -- except that, where that hop holds it back (its buffer opens as the head
  gets there), what it sent faster before waits in that buffer, but for what the hop passes
  on at its new rate in the train's time so far (the bytes in flight taken at that rate,
  not at the rate it ends with: a flow that ends alone on a link it joined at half its
  speed is late by half its head's way). Its hops from its buffer on move together, so it
  leaves every hop at once (the head's way to the buffer charged in the delivery). A
  train costs an event for a hop its head reaches only where the port would be saturated
  with it (or its credit loop is slower): elsewhere no port binds anew, the rates stay,
  and it joins at the next re-share. A train whose head's way to its last hop is under
  1/32 of its time alone at its slowest speed takes every hop from its start (off by well
  under that share: a 4-hop flow whose head's way is 11% of its time was at most 4.5%
  late; against the per-packet reference every flow is within 4.1% for 128 KiB messages
  and 2% for 256 KiB ones);
* a train has one buffer (whose fill and credits hold it back): the one at the first port
  that cut it when it became congested (its tightest port where no transit input holds two
  trains; none if the first link ties with it); the bytes it has waiting further on are
  tracked per hop to set its rates there and to leave them out of that buffer's occupancy,
  but they fill no buffer of their own;
* a drained backlog is weighed in its FIFO by the rates it came in at before its source
  drained; the weights are the rates FIFO inputs with unbounded buffers would pass on,
  whatever the credits do, except that a train held by credits weighs what it is injected
  at, and where no path has more than two hops every weight is equal (a transit input then
  carries trains one source injected at equal rates; a drained backlog's weight is not
  told apart);
* once its source is drained, a train's hop beyond its first counts as draining a queue
  only while more than a packet of it waits there (below, it passes on what arrives): the
  margin keeps a hop from flipping between the two at ever closer instants;
* a solve changes each train's state (whole, filling or draining a buffer, held by
  credits) at most once and re-solves at most 6 times; a switch hands over at most 6
  buffer instants of one port per simulated instant (guards against a state that solves
  back to itself);
* a full buffer's split between trains is frozen: each train that was filling it is held
  to its downstream rate (per-train credits) until its own rate downstream exceeds its
  rate upstream (then its backlog drains); space that a draining train frees is not handed
  to trains held by credits, and a train arriving at a full port is credit-paced at once.
  A train held by credits moves at one rate on its whole path, as if every buffer after the
  full one were full too (its bytes beyond its buffer fill none of their own: letting its
  full buffer's port pass it on faster than its tightest port beyond would pile them up
  there unbounded, 9 times a 64 KiB buffer on the torus below). On a 4x4 torus all-to-all
  the run ends 2.9%, 2.5% and 1.7% after the max-min bound with 64 KiB, 256 KiB and 1 MiB
  buffers (0.3% with buffers that never fill); that bound is out of reach at these
  buffers, not only here: the per-packet simulator with the same buffers and credits
  (``tests/packet_reference.py``) ends it 8.7%, 4.6% and 3.8% after it;
* events fall on whole nanoseconds (rounded up): a buffer may overshoot its size by the
  bytes of under 1 ns, which the statistics clip.

Statistics per directed link (:meth:`PacketNetwork.port_stats`): bytes carried, busy time
(the trains' summed rates over the link's speed, integrated), the largest occupancy of the
buffer of the port that feeds it (0 for a source NPU's own link: the message in its memory
is not a queue), and the time it was held back by credits (it had spare capacity while a
train on it waited for a full buffer downstream, or for credits of its own credit loop).

Defaults, when the network YAML does not set them:

* ``packet-size: 4096`` bytes -- the MTU of InfiniBand and RoCE fabrics (NVLink moves
  smaller flits, but as the pipeline term ``(h-1)*P/B`` shows, the packet size only matters
  for messages of a few packets; halving it changes a 4x4-mesh ring all-reduce by far less
  than 1%);
* ``switch-buffer: 1048576`` bytes (1 MiB) per output port -- the per-port share of a
  modern data-centre switch's 32-64 MiB shared buffer, and above the credit loop's
  bandwidth-delay product of links up to 400 GB/s with 1 us latency. Lossless fabrics are
  built so that credits never idle a link, so while the YAML does not set ``switch-buffer``
  no credit loop caps a link (whatever its speed); the buffer still fills and drains.

Routing is the other backends' (dimension-order across stacked dimensions, each building
block's route, Graph shortest path or ECMP per flow); a Graph with ``routing: spray``
sprays each flow's packets evenly over all its fewest-link paths (one train per path).
A folded run (:mod:`simpy_astra.folding.packet`) makes one port per orbit of links and
carries every hop of a path on its orbit's representative port, entered from the real link
its relabelled copy comes from; a port may then occur at several hops of one path.

Module by module: ``trains`` (trains, their paths and pending events, the bounds of a
solve), ``solver`` (the sharing rule as pure functions over small records: FIFO arrival
rates, weighted max-min, the :class:`~.solver.Share` and :class:`~.solver.Limit` it gives
each unit), ``rates`` (trains to the solver's units and back), ``port`` (a directed link
and its output buffer: occupancy, largest queue, timer), ``switch`` (a forwarding device's
process, which has its ports look at their buffers) and ``network`` (routing, the
re-share, statistics). Each object changes only its own state: the network drives ports
and trains through their methods.
"""

from simpy_astra.network.packet.network import PacketNetwork
from simpy_astra.network.packet.port import Port
from simpy_astra.network.packet.switch import SwitchProcess
from simpy_astra.network.packet.trains import DEFAULT_PACKET_SIZE_BYTES, DEFAULT_SWITCH_BUFFER_BYTES

__all__ = ["DEFAULT_PACKET_SIZE_BYTES", "DEFAULT_SWITCH_BUFFER_BYTES", "PacketNetwork", "Port", "SwitchProcess"]
