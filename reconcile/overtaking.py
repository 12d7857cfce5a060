"""Who may still go ahead of a waiting request: later arrivals whose R-32 standing is better.

A position counts the requests waiting now; a request submitted later goes ahead of it when its
standing (R-32 criteria 1 to 4, ``ServiceKey.standing``) is smaller at the pool where it waits:
a policy of higher priority, one that stays in share while it borrows (R-32.2), a profile served
first there, or a policy ranked first on its profile. Only an equal standing keeps arrival order.

Each queue (policy, profile) that the pool serves is judged with a request of its profile's
allotment, in share or not by its policy's usage now (the ledger): so a dynamic profile's smaller
request could stay in share where this says it borrows, and the answer errs towards "may".

>>> config = Config(
...     pools=(Pool("h100", Vector.of(gpu=8)),),
...     profiles=(Profile("job", Vector.of(gpu=1), dynamic=True, pools=("h100",), policies=("research", "dev")),),
...     policies=(Policy("research", quotas=(Quota("h100", "gpu", 4000),)), Policy("dev")))
>>> ahead_of_it(TermsCache(config), Ledger(config), "h100", "dev", "job", Vector.of(gpu=1, step_run=1))
(Overtaker(policy='research', profile='job', why='stays in its share while this one borrows (R-32.2)'),)
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
    """A queue whose later requests may go ahead, and the R-32 criterion that puts them there."""

    policy: str
    profile: str
    why: str


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
                found.append(Overtaker(team, other, _why(theirs, mine, pool, other)))
    return tuple(found)


def overtaking_text(overtakers: tuple[Overtaker, ...]) -> str:
    """"a later request of policy research (higher priority) may still go ahead of it", or ""."""
    if not overtakers:
        return ""
    named = dict.fromkeys(f"{o.policy}/{o.profile}, which {o.why}" for o in overtakers)
    return "a later request may still go ahead of it: of " + "; of ".join(named)


def _key(terms: TermsCache, pool: str, policy: str, profile: str, in_share: bool) -> ServiceKey:
    """The service key of a request of the queue on ``pool``; its submission does not matter here."""
    config = terms.config
    return service_key(config.policy[policy].priority, in_share, config.execution_index[(pool, profile)],
                       config.policy_rank[(profile, policy)], 0, 0)


def _why(theirs: ServiceKey, mine: ServiceKey, pool: str, profile: str) -> str:
    """The first R-32 criterion on which ``theirs`` wins."""
    if theirs.negated_priority != mine.negated_priority:
        return "has a higher priority (R-32.1)"
    if theirs.borrows != mine.borrows:
        return "stays in its share while this one borrows (R-32.2)"
    if theirs.execution_index != mine.execution_index:
        return f"is served first on pool {pool} (R-32.3)"
    return f"ranks first on profile {profile} (R-32.4)"
