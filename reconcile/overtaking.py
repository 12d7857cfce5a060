"""Who may still go ahead of a waiting request: later arrivals whose R-32 standing is better.

A position counts the requests waiting now; a request submitted later goes ahead of it when its
standing (R-32 criteria 1 to 4, ``ServiceKey.standing``) is smaller at the pool where it waits:
a policy of higher priority, one that stays in share while it borrows (R-32.2), a profile served
first there, or a policy ranked first on its profile. Only an equal standing keeps arrival order.

Each queue (policy, profile) that the pool serves is judged with a request of its profile's
allotment, in share or not by its policy's usage now (the ledger). A dynamic profile's request
smaller than its allotment may stay in share where the allotment would borrow: that case is not
named. Requests waiting now are the position's business, not this module's.

>>> config = Config(
...     pools=(Pool("h100", Vector.of(gpu=8)),),
...     profiles=(Profile("job", Vector.of(gpu=1), dynamic=True, pools=("h100",), policies=("research", "dev")),),
...     policies=(Policy("research", quotas=(Quota("h100", "gpu", 4000),)), Policy("dev")))
>>> overtaking_text(ahead_of_it(TermsCache(config), Ledger(config), "h100", "dev", "job", Vector.of(gpu=1, step_run=1)))
'a later request may still go ahead of it: one that stays in its share while this one borrows (research, R-32.2)'
>>> ahead_of_it(TermsCache(config), Ledger(config), "h100", "research", "job", Vector.of(gpu=1, step_run=1))
()
"""

from __future__ import annotations

from typing import NamedTuple

from .ledger import Ledger
from .ordering import ServiceKey, service_key
from .quantity import STEP_RUN, Vector
from .quota import TermsCache


class Overtaker(NamedTuple):
    """A queue whose later requests may go ahead, and the R-32 criterion (1 to 4) that puts them there."""

    policy: str
    profile: str
    criterion: int


def ahead_of_it(terms: TermsCache, ledger: Ledger, pool: str, policy: str, profile: str,
                resources: Vector) -> tuple[Overtaker, ...]:
    """The queues served by ``pool`` whose later requests may go ahead of a request of ``policy``,
    ``profile`` and ``resources`` waiting there, with the policies' usage of ``ledger``; in
    configuration order."""
    config = terms.config
    mine = _key(terms, pool, policy, profile, ledger.in_share(terms(policy, pool), resources))
    found = []
    for other in config.profiles_on.get(pool, ()):
        allotment = Vector({**config.profile[other].resources, **STEP_RUN})
        for team in config.profile[other].policies:
            theirs = _key(terms, pool, team, other, ledger.in_share(terms(team, pool), allotment))
            if theirs.standing < mine.standing:
                found.append(Overtaker(team, other, _criterion(theirs, mine)))
    return tuple(found)


def overtaking_text(overtakers: tuple[Overtaker, ...]) -> str:
    """The overtakers as a clause, by criterion: "a later request may still go ahead of it: one of
    a higher priority (research); one that stays in its share while this one borrows (ops, R-32.2)",
    or "" when none may."""
    if not overtakers:
        return ""
    parts = []
    for criterion, words in _WORDS.items():
        names = dict.fromkeys(_name(o) for o in overtakers if o.criterion == criterion)
        if names:
            parts.append(words.format(", ".join(names)))
    return "a later request may still go ahead of it: " + "; ".join(parts)


_WORDS = {
    1: "one of a higher priority ({}, R-32.1)",
    2: "one that stays in its share while this one borrows ({}, R-32.2)",
    3: "one of a profile served first on this pool ({}, R-32.3)",
    4: "one of a policy ranked first on its profile ({}, R-32.4)",
}


def _name(overtaker: Overtaker) -> str:
    """What tells the overtakers of a criterion apart: the policy, the profile, or both."""
    if overtaker.criterion == 3:
        return overtaker.profile
    if overtaker.criterion == 4:
        return f"{overtaker.policy}/{overtaker.profile}"
    return overtaker.policy


def _key(terms: TermsCache, pool: str, policy: str, profile: str, in_share: bool) -> ServiceKey:
    """The service key of a request of the queue on ``pool``; its submission does not matter here."""
    config = terms.config
    return service_key(config.policy[policy].priority, in_share, config.execution_index[(pool, profile)],
                       config.policy_rank[(profile, policy)], 0, 0)


def _criterion(theirs: ServiceKey, mine: ServiceKey) -> int:
    """The first R-32 criterion on which ``theirs`` wins."""
    if theirs.negated_priority != mine.negated_priority:
        return 1
    if theirs.borrows != mine.borrows:
        return 2
    return 3 if theirs.execution_index != mine.execution_index else 4
