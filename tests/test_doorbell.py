"""The doorbell through which an event wakes a process in its own instant
(:class:`simpy_astra.engine.events.Doorbell`): ``ring`` runs the work in the waiting
process, ``run_or_ring`` runs it in the ringer while the process waits. Both keep SimPy's
order: a ring before the process waits runs when the process first waits, after the
events already due; neither loses, repeats or reorders a ring."""

from __future__ import annotations

import simpy

from simpy_astra.engine.events import Doorbell


def _serving() -> tuple[simpy.Environment, Doorbell, list[tuple[str, float]]]:
    env = simpy.Environment()
    doorbell = Doorbell(env)
    env.process(doorbell.serve())
    return env, doorbell, []


def test_a_ring_runs_the_work_in_the_waiting_process_in_the_ringers_instant() -> None:
    env, doorbell, log = _serving()
    env.run(until=1)  # the process now waits on its bell
    waited = doorbell.bell
    event = env.timeout(4)
    event.callbacks.append(lambda _e: (doorbell.ring(log.append, ("a", env.now)), log.append(("ringer", env.now))))
    env.run()
    assert log == [("a", 5), ("ringer", 5)]  # in place: the work ran before the ringer went on
    assert doorbell.bell is not waited  # the process was resumed and waits on the next bell


def test_run_or_ring_runs_the_work_in_the_ringer_while_the_process_waits() -> None:
    env, doorbell, log = _serving()
    env.run(until=1)
    waited = doorbell.bell
    event = env.timeout(4)
    event.callbacks.append(lambda _e: (doorbell.run_or_ring(log.append, ("a", env.now)),
                                       doorbell.run_or_ring(log.append, ("b", env.now)),
                                       log.append(("ringer", env.now))))
    env.run()
    assert log == [("a", 5), ("b", 5), ("ringer", 5)]
    assert doorbell.bell is waited  # the process never woke: it still waits on the same bell
    doorbell.ring(log.append, ("c", env.now))  # and a ring after still reaches it
    assert log[-1] == ("c", 5) and doorbell.bell is not waited


def test_run_or_ring_rings_when_the_process_is_not_waiting_yet() -> None:
    # before the process has started it waits on nothing: the work must wait for it, and
    # runs in order with rings made after, once the process is there
    env, doorbell, log = _serving()
    doorbell.run_or_ring(log.append, "first")
    doorbell.ring(log.append, "second")
    doorbell.run_or_ring(log.append, "third")
    assert log == []
    env.run()
    assert log == ["first", "second", "third"]


def test_a_stopped_doorbell_runs_nothing() -> None:
    env, doorbell, log = _serving()
    env.run(until=1)
    doorbell.stop()
    doorbell.run_or_ring(log.append, "a")
    doorbell.ring(log.append, "b")
    env.run()
    assert log == []
