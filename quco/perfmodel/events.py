"""The discrete-event kernel the performance model runs on: the part of SimPy 4 that
quco.perfmodel.sim uses (processes, timeouts, plain events, the AllOf of two events, an
unbounded Store), with SimPy's semantics to the event: the same events are scheduled in the
same order with the same (time, priority, sequence number) keys, so every result is the one
SimPy gives, bit for bit (tests/test_perfmodel_speed.py runs both). What it leaves out is
what costs there: properties (`now` is an attribute), class-bound event factories, failure
and interrupt handling (the model never fails an event), condition values. A search of tens
of thousands of work-groups spends most of its time here (issue #29 item 3).
"""
from __future__ import annotations

from heapq import heappop, heappush
from itertools import count

PENDING = object()  # an event's value until it is triggered
URGENT, NORMAL = 0, 1  # SimPy's priorities: a process starts before events of the same time


class Event:
    __slots__ = ("env", "callbacks", "_value", "_ok")

    def __init__(self, env: "Environment"):
        self.env, self.callbacks, self._value = env, [], PENDING

    @property
    def triggered(self) -> bool:
        return self._value is not PENDING

    def succeed(self, value=None) -> "Event":
        self._ok, self._value = True, value
        self.env.schedule(self)
        return self

    def __and__(self, other: "Event") -> "Event":
        return AllOf(self.env, (self, other))


class Process(Event):
    """A generator that yields events and resumes when each is processed (SimPy's Process:
    started by an URGENT event; an event already processed resumes it at once)."""
    __slots__ = ("_generator",)

    def __init__(self, env: "Environment", generator):
        Event.__init__(self, env)
        self._generator = generator
        start = Event(env)
        start.callbacks.append(self._resume)
        start._ok, start._value = True, None
        env.schedule(start, URGENT)

    def _resume(self, event: Event) -> None:
        send = self._generator.send
        while True:
            try:
                event = send(event._value)
            except StopIteration as stop:
                self._ok, self._value = True, stop.value
                self.env.schedule(self)
                return
            if event.callbacks is not None:  # not processed yet: wait for it
                event.callbacks.append(self._resume)
                return


class AllOf(Event):
    """Triggered once every one of its events is (SimPy's Condition with all_events)."""
    __slots__ = ("_events", "_count")

    def __init__(self, env: "Environment", events: tuple):
        Event.__init__(self, env)
        self._events, self._count = events, 0
        for ev in events:
            if ev.callbacks is None:
                self._check(ev)
            else:
                ev.callbacks.append(self._check)

    def _check(self, event: Event) -> None:
        if self._value is not PENDING:
            return
        self._count += 1
        if self._count == len(self._events):
            self.succeed()


class Store:
    """An unbounded FIFO store (SimPy's Store with capacity inf): a put succeeds at once and
    its processing serves the first waiting get; a get succeeds at once if an item is there,
    and its processing serves the first waiting put (none wait in an unbounded store)."""

    def __init__(self, env: "Environment"):
        self.env, self.items, self.put_queue, self.get_queue = env, [], [], []

    def put(self, item) -> Event:
        ev = Event(self.env)
        self.put_queue.append(ev)
        ev.callbacks.append(self._trigger_get)
        self.items.append(item)  # _trigger_put: room for it, always
        ev.succeed()
        self.put_queue.pop(0)
        return ev

    def get(self) -> Event:
        ev = Event(self.env)
        self.get_queue.append(ev)
        ev.callbacks.append(self._trigger_put)
        self._trigger_get(None)
        return ev

    def _trigger_get(self, _event) -> None:
        if self.get_queue and self.items:  # SimPy looks at the first get only
            self.get_queue.pop(0).succeed(self.items.pop(0))

    def _trigger_put(self, _event) -> None:
        pass  # no put ever waits for room


class Environment:
    """The event queue and the clock; `scheduled` counts the events scheduled (a speed figure)."""

    def __init__(self):
        self.now = 0  # SimPy's initial time, an int
        self._queue: list = []
        self._eid = count()
        self.scheduled = 0

    def schedule(self, event: Event, priority: int = NORMAL, delay: float = 0) -> None:
        self.scheduled += 1
        heappush(self._queue, (self.now + delay, priority, next(self._eid), event))

    def event(self) -> Event:
        return Event(self)

    def timeout(self, delay: float, value=None) -> Event:
        if delay < 0:
            raise ValueError(f"Negative delay {delay}")
        ev = Event(self)
        ev._ok, ev._value = True, value
        self.scheduled += 1
        heappush(self._queue, (self.now + delay, NORMAL, next(self._eid), ev))
        return ev

    def process(self, generator) -> Process:
        return Process(self, generator)

    def run(self) -> None:
        """Process events until none is left."""
        queue = self._queue
        while queue:
            self.now, _, _, event = heappop(queue)
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
