"""A PipelineWorker's handlers that record each call, in order, for a test to wait on."""
import threading

from waits import wait_until

EVENTS = ("welcome", "trigger", "abort", "complete", "commit", "all_committed", "release", "state",
          "savepoint_refused", "disconnected")


class Recorder:
    """events: (name, args) of every handler call, in the order the worker made them."""

    def __init__(self):
        self._condition = threading.Condition()
        self._events = []

    def handlers(self):
        """The keyword arguments that hand every handler of PipelineWorker to this recorder."""
        return {f"on_{name}": self._handler(name) for name in EVENTS}

    def _handler(self, name):
        def record(*args):
            with self._condition:
                self._events.append((name, args))
                self._condition.notify_all()
        return record

    def events(self):
        with self._condition:
            return list(self._events)

    def names(self):
        return [name for name, _ in self.events()]

    def of(self, name):
        """The arguments of each call of handler `name` so far."""
        return [args for event, args in self.events() if event == name]

    def wait_for(self, name, count=1):
        """The arguments of each call of handler `name`, once there are at least `count`."""
        with self._condition:
            wait_until(self._condition, lambda: len(self.of(name)) >= count,
                       f"{count} call(s) of on_{name}")
            return self.of(name)

    def wait_for_event(self, event):
        """Waits until the handler call `event`, (name, args), was recorded."""
        with self._condition:
            wait_until(self._condition, lambda: event in self._events, f"the event {event}")
