"""The hand-over of traces the size checks decoded to the run's build (report/ and folding/
meet only through :class:`~simpy_astra.infra.decoded_traces.DecodedTraces`)."""

from __future__ import annotations

from simpy_astra.config.inputs import WorkloadInfo
from simpy_astra.infra.decoded_traces import DecodedTraces


def test_a_decoded_trace_is_handed_over_once_and_the_rest_released():
    traces = DecodedTraces()
    nodes, other = ["a node"], []
    traces.keep("w.0.et", nodes)
    traces.keep("w.1.et", other)
    assert traces.held("w.0.et") is nodes and traces.held("w.1.et") is other  # the other check reads it
    assert traces.take("w.0.et") is nodes and traces.take("w.0.et") is None  # the build owns it now
    traces.release()  # a rank the run does not simulate: not held past the build
    assert traces.held("w.1.et") is None and traces.take("w.1.et") is None


def test_each_runs_workload_has_its_own_traces():
    assert isinstance(WorkloadInfo().decoded, DecodedTraces)
    assert WorkloadInfo().decoded is not WorkloadInfo().decoded
