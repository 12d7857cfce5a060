"""How long to wait before asking the server again: 1 s doubling to 20 s, jittered.

Jitter keeps a hundred clients that lost the server at the same moment from coming back at the
same moment. Each delay is the nominal one (1, 2, 4, 8, 16, 20, 20, …) times a factor drawn
from [0.8, 1.2], never above the cap:

>>> import random
>>> delays = Backoff(rng=random.Random(7))
>>> [round(delays.next(), 2) for _ in range(7)]
[0.93, 1.72, 4.24, 6.63, 16.23, 18.93, 16.46]
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    first: float = 1.0
    cap: float = 20.0
    jitter: float = 0.2
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0

    def nominal(self) -> float:
        return min(self.cap, self.first * 2 ** self.attempt)

    def next(self) -> float:
        """The delay before the next try; each call doubles the next one, up to the cap."""
        delay = min(self.cap, self.nominal() * self.rng.uniform(1 - self.jitter, 1 + self.jitter))
        self.attempt = min(self.attempt + 1, 32)  # 2**32 s is far past any cap: no float overflow
        return delay

    def reset(self) -> None:
        """Back to 1 s: something changed, so the next change may come soon."""
        self.attempt = 0
