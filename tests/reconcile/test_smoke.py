from tests.reconcile.builders import config, policy, pool, profile, req, snapshot
from tests.reconcile.cases import outcome


def test_a_preemptible_request_borrows_past_its_reservation():  # S-2
    cfg = config(pool("dc", gpu=8), policy("ml", "dc:gpu 4/8", priority=10), profile("job", "dc", "ml", dynamic=True))
    assert outcome(snapshot(cfg, req(1, "ml", "job", gpu=6))) == {1: "allocated on dc"}
