"""Reading a submission body (poolweb/api/submission.py): defaults, every error with its path."""

from __future__ import annotations

import pytest

from poolweb.api.submission import SubmissionInvalid, read_submission
from poolweb.selectors.versions import live_config
from poolweb.services.requests import Submission
from reconcile import Vector


def test_the_read_submission_defaults_follow_the_spec(provisioned):
    submission = read_submission({"policy": "dev", "profile": "job"}, live_config())
    assert submission == Submission(policy="dev", profile="job", resources=Vector.of(gpu=1, step_run=1),
                                             preemptible=True, max_retries=0, lease_seconds=300, name="", labels={})


def test_input_errors_carry_every_problem_with_its_path(provisioned):
    with pytest.raises(SubmissionInvalid) as raised:
        read_submission({"profile": "half", "lease_seconds": 5, "resources": {}}, live_config())
    assert [(e.path, e.code) for e in raised.value.errors] == [
        ("policy", "required"), ("resources", "fixed_profile"), ("lease_seconds", "out_of_range")]
