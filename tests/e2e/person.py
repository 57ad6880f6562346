"""A person at the desk, as the input they make: one small pointer motion every `every`
seconds while present, none while away. How a motion is made (XTEST on X11, the virtual
pointer on sway) is the suite's; the timing and the hand-over are shared here."""

import threading
import time


class Person:
    def __init__(self, move, every):
        """`move()` makes one motion; `every` is the gap between two while present."""
        self._move = move
        self.every = every
        self.present = threading.Event()
        self.moving = threading.Lock()
        self.stopped = False
        self.last_input = None
        threading.Thread(target=self.run, daemon=True).start()

    def move(self):
        self._move()
        self.last_input = time.monotonic()

    def run(self):
        while not self.stopped:
            self.present.wait()
            with self.moving:
                if self.present.is_set() and not self.stopped:
                    self.move()
            time.sleep(self.every)

    def arrive(self):
        with self.moving:
            self.move()
            self.present.set()

    def leave(self):
        """Stop touching anything; answers the time of the last input."""
        with self.moving:
            self.present.clear()
            return self.last_input

    def stop(self):
        with self.moving:
            self.stopped = True
            self.present.set()
