"""What the bridge does in one poll (bridge/poolweb_slurm/plan.py, decision 133), cell by cell of
plan.py's table: a Slurm job as squeue shows it and its request as Poolweb shows it, to the
actions. Pure: no Slurm, no Poolweb."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from poolweb_slurm.mapping_file import parse_mapping
from poolweb_slurm.plan import Memory, Plan, early_grants, job_of, plan
from tests.slurm.examples import CATALOGUE, ENDED, HELD, MAPPED, MAPPING, NOW, RELEASED, RUNNING, request


def planned(slurm_job, poolweb_request=None, memory: Memory | None = None, now: datetime = NOW, **given) -> Plan:
    requests = {slurm_job.id: poolweb_request} if poolweb_request else {}
    return plan([slurm_job] if slurm_job else [], given.get("requests", requests), mapping=MAPPED,
                catalogue=given.get("catalogue", CATALOGUE), memory=memory or Memory(), now=now)


def only(steps: Plan, **expected: Any) -> None:
    """The plan does what ``expected`` says and nothing else."""
    assert {name: value for name, value in vars(steps).items() if value} == expected


# --- a job without a request ---------------------------------------------------------------------

def test_a_held_job_without_a_request_is_registered_for_its_user():
    (submission,) = planned(HELD).register
    assert (submission.owner, submission.idempotency_key, submission.body["profile"]) == \
        ("ann", "slurm:clearml:12", "4xgpu")


def test_a_held_job_that_maps_to_nothing_stays_held_with_the_fix_in_its_comment():
    steps = planned(dataclasses.replace(HELD, account="web"))
    only(steps, comments={"12": steps.comments["12"]})
    assert steps.comments["12"].startswith("poolweb: account web has no Poolweb policy")


def test_a_running_job_without_a_request_is_registered_to_find_or_make_it():
    assert [submission.job for submission in planned(RUNNING).register] == ["12"]


def test_a_running_job_that_maps_to_nothing_is_taken_back():
    steps = planned(dataclasses.replace(RUNNING, account="web"))
    assert list(steps.requeue) == ["12"] and "account web" in steps.requeue["12"]


def test_without_poolweb_s_configuration_a_new_job_waits_for_the_next_poll():
    only(planned(HELD, catalogue=None))


def test_an_ended_job_without_a_request_is_left_alone():
    only(planned(ENDED))


# --- pending -------------------------------------------------------------------------------------

def test_a_waiting_job_shows_poolweb_s_reason_and_place():
    steps = planned(HELD, request("pending", position=3, queue_pool="bare-metal"))
    only(steps, comments={"12": "poolweb: #3 in line for bare-metal: waiting for 4 gpu on bare-metal"})


def test_a_comment_already_right_is_not_written_again():
    held = dataclasses.replace(HELD, comment="poolweb: #3 in line for bare-metal: waiting for 4 gpu on bare-metal")
    only(planned(held, request("pending", position=3, queue_pool="bare-metal")))


def test_a_waiting_job_s_comment_is_rewritten_at_most_every_comment_seconds():
    held = dataclasses.replace(HELD, comment="poolweb: #3 in line for bare-metal: waiting for 4 gpu on bare-metal")
    for changed in (request("pending", position=2, queue_pool="bare-metal"),
                    request("pending", position=3, queue_pool="bare-metal", message="over dev's limit")):
        only(planned(held, changed, Memory(commented={"12": NOW - timedelta(seconds=9)})))
        written = planned(held, changed, Memory(commented={"12": NOW - timedelta(seconds=10)})).comments
        assert written["12"] != held.comment


def test_a_running_job_whose_request_is_pending_again_is_requeued_held():
    steps = planned(RUNNING, request("pending", attempt=2))
    only(steps, requeue={"12": steps.requeue["12"]})


def test_a_released_job_not_started_whose_request_is_pending_is_held_again():
    assert list(planned(RELEASED, request("pending")).hold) == ["12"]


def test_a_job_that_ended_while_its_request_waited_withdraws_the_request():
    waiting = request("pending")
    only(planned(ENDED, waiting), cancel_requests=[waiting])


# --- allocated -----------------------------------------------------------------------------------

def test_a_granted_held_job_is_pointed_at_the_granted_pool_s_partition_and_released():
    only(planned(HELD, request("allocated")), grants={"h100": ["12"]}, moves={"12"})


def test_a_granted_job_that_asked_for_that_partition_alone_is_only_released():
    only(planned(dataclasses.replace(HELD, partitions=("h100",)), request("allocated")), grants={"h100": ["12"]})


def test_a_granted_job_slurm_requeued_with_a_later_begin_time_is_pointed_again_to_start_now():
    requeued = dataclasses.replace(HELD, partitions=("h100",), eligible=NOW + timedelta(seconds=110))
    only(planned(requeued, request("allocated")), grants={"h100": ["12"]}, moves={"12"})
    began = dataclasses.replace(requeued, eligible=NOW - timedelta(seconds=1))
    only(planned(began, request("allocated")), grants={"h100": ["12"]})


def test_a_running_job_is_heartbeaten_each_third_of_its_lease():
    fresh = request("allocated")
    only(planned(RUNNING, fresh))
    due = request("allocated", lease_expires_at=NOW + timedelta(seconds=200))
    only(planned(RUNNING, due), heartbeats=[due])


def test_a_job_that_ended_releases_its_request():
    granted = request("allocated")
    only(planned(ENDED, granted), release=[(None, granted)])


def test_a_request_whose_job_is_gone_from_squeue_is_released():
    granted = request("allocated")
    only(planned(None, requests={"12": granted}), release=[(None, granted)])


# --- preempting ----------------------------------------------------------------------------------

def test_a_preempted_job_is_signalled_once():
    reclaimed = request("preempting")
    only(planned(RUNNING, reclaimed), signals=["12"])
    signalled = Memory(signalled={("12", 1): NOW})
    only(planned(RUNNING, reclaimed, signalled))


def test_at_the_end_of_poolweb_s_grace_less_a_poll_a_job_with_retries_left_is_requeued_held():
    reclaimed = request("preempting", grace_ends_at=NOW + timedelta(seconds=1))
    steps = planned(RUNNING, reclaimed, Memory(signalled={("12", 1): NOW - timedelta(seconds=29)}))
    only(steps, requeue={"12": "poolweb: preempted by Poolweb (Reclaimed): held until Poolweb grants it again"},
         release=[("12", reclaimed)])


def test_grace_seconds_ends_the_grace_sooner():
    mapping = parse_mapping(MAPPING + "[bridge]\ngrace_seconds = 5\n", "f")
    reclaimed = request("preempting")
    steps = plan([RUNNING], {"12": reclaimed}, mapping=mapping, catalogue=CATALOGUE,
                 memory=Memory(signalled={("12", 1): NOW - timedelta(seconds=5)}), now=NOW)
    assert list(steps.requeue) == ["12"]


def test_a_preempted_job_without_retries_left_is_cancelled():
    reclaimed = request("preempting", attempt=2, max_retries=1)
    steps = planned(RUNNING, reclaimed, Memory(signalled={("12", 2): NOW - timedelta(seconds=60)}),
                    now=NOW + timedelta(seconds=30))
    only(steps, cancel_jobs={"12": "poolweb: preempted by Poolweb (Reclaimed): no retries left"},
         release=[("12", reclaimed)])


def test_a_preempted_job_that_exited_in_its_grace_is_requeued_with_retries_left():
    reclaimed = request("preempting")
    steps = planned(ENDED, reclaimed, Memory(signalled={("12", 1): NOW}))
    assert list(steps.requeue) == ["12"] and steps.release == [("12", reclaimed)]


def test_a_preempted_job_already_held_only_releases_its_request():
    reclaimed = request("preempting")
    only(planned(HELD, reclaimed), release=[(None, reclaimed)])


def test_a_preempted_job_that_had_not_started_is_held_again_without_a_signal():
    reclaimed = request("preempting")
    steps = planned(RELEASED, reclaimed)
    assert list(steps.hold) == ["12"] and steps.signals == [] and steps.release == [("12", reclaimed)]


# --- ended in Poolweb ----------------------------------------------------------------------------

def test_a_job_whose_request_poolweb_ended_is_cancelled_with_the_reason():
    expired = request("expired", reason="LeaseExpired", message="its lease ran out")
    only(planned(RUNNING, expired), cancel_jobs={"12": "poolweb: request 41 is expired: its lease ran out"})


def test_a_rejected_held_job_stays_held_with_the_reason():
    rejected = request("rejected", reason="ExceedsLimit", message="4 gpu is over dev's limit of 2 gpu")
    only(planned(HELD, rejected),
         comments={"12": "poolweb: request 41 is rejected: 4 gpu is over dev's limit of 2 gpu"})


def test_an_ended_job_with_an_ended_request_is_left_alone():
    only(planned(ENDED, request("released")))


def test_new_jobs_are_registered_in_slurm_s_order_of_submission():
    jobs = [dataclasses.replace(HELD, id=job_id) for job_id in ("13", "12_2", "9", "12_1")]
    steps = plan(jobs, {}, mapping=MAPPED, catalogue=CATALOGUE, memory=Memory(), now=NOW)
    assert [submission.job for submission in steps.register] == ["9", "12_1", "12_2", "13"]


def test_a_job_held_until_its_own_begin_time_is_registered_then():
    later = dataclasses.replace(HELD, eligible=NOW + timedelta(minutes=5))
    only(planned(later))
    assert planned(later, now=NOW + timedelta(minutes=5)).register


def test_r54_a_waiting_job_s_comment_says_when_it_starts():
    eta = NOW + timedelta(hours=2)
    steps = planned(HELD, request("pending", position=3, queue_pool="bare-metal", eta=eta, eta_basis="run_limits",
                                  eta_confidence="high"))
    local = eta.astimezone()
    when = f"{local:%H:%M}" if local.date() == NOW.astimezone().date() else f"{local:%Y-%m-%d %H:%M}"
    only(steps, comments={"12": f"poolweb: #3 in line for bare-metal, starts ≈ {when}: waiting for 4 gpu on bare-metal"})
    unknown = planned(HELD, request("pending", position=3, queue_pool="bare-metal", eta_basis="unknown"))
    only(unknown, comments={"12": "poolweb: #3 in line for bare-metal: waiting for 4 gpu on bare-metal"})


# --- between two polls: allocations the event stream reported (decision 193) ---------------------

def early(slurm_job, allocation, polled=None) -> Plan:
    return early_grants({slurm_job.id: slurm_job}, {slurm_job.id: polled} if polled else {},
                        {slurm_job.id: allocation}, mapping=MAPPED, now=NOW)


def test_an_allocation_reported_between_two_polls_releases_its_held_job_as_a_poll_would():
    granted = request("allocated")
    assert early(HELD, granted, polled=request("pending")) == planned(HELD, granted)
    only(early(HELD, granted), grants={"h100": ["12"]}, moves={"12"})  # registered after the poll's read


def test_an_allocation_is_not_granted_early_to_a_job_the_poll_did_not_see_held():
    for seen in (RELEASED, RUNNING, ENDED):
        only(early(seen, request("allocated")))
    only(early_grants({}, {}, {"12": request("allocated")}, mapping=MAPPED, now=NOW))  # unknown to the poll


def test_an_allocation_no_newer_than_what_the_poll_read_is_left_to_the_polls():
    """A late event of attempt 1's grant must not release the job Poolweb queued again, nor one
    whose request the poll read as reclaimed or ended."""
    first = request("allocated", attempt=1)
    for polled in (request("pending", attempt=2), request("preempting", attempt=1), request("allocated", attempt=1),
                   request("cancelled", attempt=1)):
        only(early(HELD, first, polled=polled))
    only(early(HELD, request("allocated", attempt=2), polled=request("preempting", attempt=1)),
         grants={"h100": ["12"]}, moves={"12"})


def test_an_early_grant_to_a_pool_no_partition_maps_is_left_to_the_poll_s_comment():
    only(early(HELD, request("allocated", pool="a100")))


def test_a_request_is_a_job_s_only_when_this_bridge_submitted_it_for_its_cluster():
    """Anyone may put the labels on a request of their own: it is not that job's, and neither the
    poll nor the event stream acts on it."""
    def of(**changes):
        return job_of(request("pending", **changes), cluster="clearml", account="slurm-bridge")

    assert of(submitted_by="slurm-bridge") == "12"
    assert of(owner="slurm-bridge") == "12"  # submitted by the bridge's account for itself
    assert of(submitted_by="ann") is None and of(owner="ann") is None
    assert of(submitted_by="slurm-bridge", labels={"slurm_cluster": "other", "slurm_job": "12"}) is None
    assert of(submitted_by="slurm-bridge", labels={"slurm_cluster": "clearml"}) is None

