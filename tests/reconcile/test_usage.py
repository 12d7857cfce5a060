"""reconcile.usage: key-seconds in share and borrowed, by hand and against a second-by-second walk."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from reconcile import Config, Policy, Pool, Quota, Vector
from reconcile.borrowing import borrowed_units
from reconcile.quota import TermsCache
from reconcile.usage import Era, Held, Reservation, Split, key_seconds

H = 3600
G = 1000  # one gpu in milli-units

DC = Pool("dc", Vector.of(gpu=8))
EDGE = Pool("edge", Vector.of(gpu=4))


def config(*quotas: Quota, pools=(DC, EDGE)) -> Config:
    return Config(pools=pools, policies=(Policy("ml", quotas=quotas), Policy("web")))


def held(id: int, gpu: float, start: int, stop: int, *, pool: str = "dc", policy: str = "ml",
         granted: int | None = None) -> Held:
    return Held(id, policy, "job", 1, pool, Vector.of(gpu=gpu), start if granted is None else granted, start, stop)


def gpu(split: Split) -> tuple[int, int, int]:
    return split.used.get("gpu", 0), split.in_share.get("gpu", 0), split.borrowed.get("gpu", 0)


def test_usage_up_to_the_reservation_is_in_share_and_the_newest_grant_borrows():
    # dc:gpu reserved 4; 2 gpu granted at 0, 4 gpu at 1h; both held until 3h.
    found = key_seconds([held(1, 2, 0, 3 * H), held(2, 4, H, 3 * H)], [Era(0, config(Quota("dc", "gpu", 4 * G)))],
                        since=0, until=3 * H)

    assert [gpu(s) for s in found.held] == [(6 * G * H, 6 * G * H, 0), (8 * G * H, 4 * G * H, 4 * G * H)]
    assert found.reservations == {("ml", "dc", "gpu"): Reservation(12 * G * H, 2 * G * H)}


def test_an_older_grant_leaving_brings_the_newer_back_into_share():
    # 4 gpu at 0 until 1h, 4 gpu at 0:30 until 2h; reserved 4: the second borrows only while the first runs.
    found = key_seconds([held(1, 4, 0, H), held(2, 4, H // 2, 2 * H)], [Era(0, config(Quota("dc", "gpu", 4 * G)))],
                        since=0, until=2 * H)

    assert gpu(found.held[1]) == (6 * G * H, 4 * G * H, 2 * G * H)


def test_a_provision_mid_period_changes_the_reservation_from_that_instant():
    # 6 gpu held 0–2h; reserved 2 until 1h, then 6.
    eras = [Era(-H, config(Quota("dc", "gpu", 2 * G))), Era(H, config(Quota("dc", "gpu", 6 * G)))]
    found = key_seconds([held(1, 6, 0, 2 * H)], eras, since=0, until=2 * H)

    assert gpu(found.held[0]) == (12 * G * H, 8 * G * H, 4 * G * H)
    assert found.reservations == {("ml", "dc", "gpu"): Reservation(8 * G * H, 0)}


def test_the_period_cuts_intervals_and_idle_counts_while_nothing_runs():
    eras = [Era(-10 * H, config(Quota("*", "gpu", 2 * G)))]
    found = key_seconds([held(1, 1, -H, H), held(2, 3, 3 * H, 5 * H, pool="edge")], eras, since=0, until=4 * H)

    assert [gpu(s) for s in found.held] == [(G * H, G * H, 0), (3 * G * H, 2 * G * H, G * H)]
    # idle: 1 gpu for 0–1h, 2 gpu for 1–3h, none for 3–4h
    assert found.reservations == {("ml", "*", "gpu"): Reservation(8 * G * H, 5 * G * H)}


def test_without_a_reservation_every_metered_unit_is_borrowed_and_unmetered_keys_are_only_used():
    h = Held(1, "web", "job", 1, "dc", Vector.of(gpu=1, mcpu=4), 0, 0, H)
    found = key_seconds([h], [Era(0, config())], since=0, until=H)

    assert found.held[0] == Split({"gpu": G * H, "mcpu": 4 * G * H}, {}, {"gpu": G * H})
    assert found.reservations == {}


def test_a_star_and_a_pool_reservation_borrow_by_the_larger_excess():
    # * reserved 4, dc reserved 1: 2 gpu on edge (granted first) then 2 on dc. The dc allocation is 1
    # over dc's reservation, 0 over *'s: 1 borrowed.
    eras = [Era(0, config(Quota("*", "gpu", 4 * G), Quota("dc", "gpu", G)))]
    found = key_seconds([held(1, 2, 0, H, pool="edge"), held(2, 2, 0, H, granted=1)], eras, since=0, until=H)

    assert [gpu(s) for s in found.held] == [(2 * G * H, 2 * G * H, 0), (2 * G * H, G * H, G * H)]


def test_no_configuration_before_the_first_version_meters_nothing():
    found = key_seconds([held(1, 2, 0, 2 * H)], [Era(H, config(Quota("dc", "gpu", G)))], since=0, until=2 * H)

    assert gpu(found.held[0]) == (4 * G * H, G * H, G * H)


# Against the rule itself: second by second, the walk of borrowed_units on what is live.

@st.composite
def histories(draw):
    pools = (DC, EDGE)
    quota_rows = st.lists(st.tuples(st.sampled_from(["dc", "edge", "*"]), st.integers(0, 6)), max_size=3,
                          unique_by=lambda row: row[0])
    eras, start = [], -2
    for _ in range(draw(st.integers(1, 3))):
        rows = draw(quota_rows)
        eras.append(Era(start, config(*(Quota(scope, "gpu", r * G) for scope, r in rows), pools=pools)))
        start += draw(st.integers(1, 8))
    helds = []
    for id in range(1, draw(st.integers(0, 7)) + 1):
        begin = draw(st.integers(-3, 12))
        helds.append(Held(id, draw(st.sampled_from(["ml", "web"])), "job", 1, draw(st.sampled_from(["dc", "edge"])),
                          Vector.of(gpu=draw(st.integers(1, 4))), begin - draw(st.integers(0, 1)), begin,
                          begin + draw(st.integers(1, 8))))
    return helds, eras


def brute_force(helds, eras, since, until):
    in_share, borrowed = [0] * len(helds), [0] * len(helds)
    for second in range(since, until):
        live_eras = [era for era in eras if era.start <= second]
        terms = TermsCache(live_eras[-1].config if live_eras else Config())
        live = [h for h in helds if h.start <= second < h.stop]
        for policy in ("ml", "web"):
            for h in live:
                if h.policy == policy:
                    units = borrowed_units(terms, policy, live).get(h.id, {})
                    if "gpu" in units:
                        index = helds.index(h)
                        borrowed[index] += units["gpu"]
                        in_share[index] += h.resources["gpu"] - units["gpu"]
    return in_share, borrowed


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(-2, 4), st.integers(1, 12))
def test_the_sweep_matches_the_rule_second_by_second(history, since, length):
    helds, eras = history
    until = since + length

    found = key_seconds(helds, eras, since=since, until=until)

    in_share, borrowed = brute_force(helds, eras, since, until)
    assert [s.in_share.get("gpu", 0) for s in found.held] == in_share
    assert [s.borrowed.get("gpu", 0) for s in found.held] == borrowed
