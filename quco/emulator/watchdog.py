"""Wall-clock stop for uncounted Soc steps (Soc(count=False)).

Unicorn's instruction limit (emu_start count=) costs a C callback per instruction, a third
of the uncounted mode's time, so that mode runs without it and this thread stops a step that
has not slept by its deadline. uc.emu_stop() is safe from another thread: Unicorn's own
timeout works that way. The deadline is seconds while a launch takes microseconds, so only
runaway code ever meets it.
"""
from __future__ import annotations

import threading
import time
import weakref


class Watchdog:
    """One daemon thread for every watched Soc; a Soc sets `_deadline` (monotonic seconds)
    while a step runs and finds `_timed_out` set if the step was stopped."""

    def __init__(self):
        self.socs, self.lock, self.thread = weakref.WeakSet(), threading.Lock(), None

    def watch(self, soc):
        with self.lock:
            self.socs.add(soc)
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name="quco-watchdog", daemon=True)
                self.thread.start()

    def _loop(self):
        while True:
            time.sleep(0.05)
            now = time.monotonic()
            with self.lock:
                socs = list(self.socs)
            for soc in socs:
                if soc._deadline is not None and now > soc._deadline:
                    soc._timed_out = True
                    soc.uc.emu_stop()


watchdog = Watchdog()
