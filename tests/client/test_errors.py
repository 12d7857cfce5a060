"""Every failure maps to an error with its own exit code and one line naming the fix (the client
issue, items 4 and 5)."""

from __future__ import annotations

import pytest

from poolctl import errors
from poolctl.errors import EXIT_CODES, ended
from poolctl.models import Request
from poolctl.transport import answer, error_for

URL = "http://127.0.0.1:8000"


def test_the_documented_exit_codes_are_distinct():
    codes = [code for code, _ in EXIT_CODES]
    assert len(codes) == len(set(codes))
    assert {errors.USAGE, errors.UNREACHABLE, errors.REFUSED, errors.REJECTED, errors.ENDED, errors.PREEMPTED,
            errors.TIMEOUT, errors.INTERRUPTED} <= set(codes)


@pytest.mark.parametrize("status, body, kind, code", [
    (401, {"detail": "the token is not valid"}, errors.AuthenticationFailed, errors.REFUSED),
    (403, {"detail": "you may not submit to policy dev: you are not in its group dev"}, errors.PermissionRefused,
     errors.REFUSED),
    (403, {"detail": "You do not have permission to perform this action."}, errors.PermissionRefused, errors.REFUSED),
    (400, {"errors": [{"path": "policy", "code": "unknown_policy", "message": "there is no policy named \"x\""}]},
     errors.InvalidInput, errors.USAGE),
    (404, {"detail": "there is no request 9"}, errors.NotFound, errors.USAGE),
    (409, {"detail": "request 9 is released, not live"}, errors.Conflict, errors.FAILURE),
    (500, {}, errors.ServerError, errors.UNREACHABLE),
    (502, {}, errors.ServerError, errors.UNREACHABLE),
])
def test_each_status_becomes_its_error_and_exit_code(status, body, kind, code):
    error = error_for(status, body, URL)
    assert type(error) is kind and error.exit_code == code


def test_a_bad_token_names_the_fix():
    line = error_for(401, {"detail": "the token is not valid"}, URL).line()
    assert "refused the token" in line and "poolctl login" in line and "create_api_token" in line
    assert f"the console's Tokens page, {URL}/account/tokens/" in line


def test_not_being_in_the_group_names_the_fix():
    line = error_for(403, {"detail": "you may not submit to policy dev: you are not in its group dev"}, URL).line()
    assert "group dev" in line and "ask an admin to add you" in line


def test_an_unknown_policy_names_where_to_look():
    error = error_for(400, {"errors": [
        {"path": "policy", "code": "unknown_policy", "message": 'there is no policy named "x"'},
        {"path": "profile", "code": "unknown_profile", "message": 'there is no profile named "y"'}]}, URL)
    assert error.line() == 'policy: there is no policy named "x" (and 1 more): `poolctl policies` lists the policies'
    assert len(error.errors) == 2


def test_a_page_that_is_not_poolweb_points_at_the_url():
    with pytest.raises(errors.ServerError) as raised:
        answer("GET", "/pools", 404, "text/html", b"<html>Not Found</html>", URL + "/api/v1")
    assert "not as a Poolweb server" in raised.value.message and "root URL" in raised.value.hint


def test_a_json_answer_is_parsed_and_an_empty_one_is_none():
    assert answer("GET", "/pools", 200, "application/json", b'[{"name": "h100"}]', URL) == [{"name": "h100"}]
    assert answer("DELETE", "/config/draft", 204, "", b"", URL) is None


@pytest.mark.parametrize("state, kind, code", [
    ("rejected", errors.Rejected, errors.REJECTED), ("cancelled", errors.Cancelled, errors.ENDED),
    ("expired", errors.Expired, errors.ENDED), ("preempted", errors.Preempted, errors.PREEMPTED),
])
def test_a_request_that_ended_without_running_raises_its_error_with_the_reason(state, kind, code):
    request = Request(id=4, state=state, reason="ExceedsPoolCapacity", message="gpu 5 is more than pool box's 2")
    error = ended(request)
    assert type(error) is kind and error.exit_code == code
    assert error.reason == "ExceedsPoolCapacity" and "gpu 5 is more than pool box's 2" in error.line()
    assert error.as_json()["request"]["id"] == 4


@pytest.mark.parametrize("state", ["pending", "allocated", "preempting", "released"])
def test_other_states_are_no_failure(state):
    assert ended(Request(id=4, state=state)) is None


@pytest.mark.parametrize("state, kind", [
    ("pending", errors.Preempted), ("preempted", errors.Preempted), ("expired", errors.Expired),
    ("cancelled", errors.Cancelled), ("released", errors.Cancelled),
])
def test_a_holder_that_lost_its_allocation_is_told_how(state, kind):
    assert type(errors.lost(Request(id=4, state=state, reason="Reclaimed", message="…"))) is kind
