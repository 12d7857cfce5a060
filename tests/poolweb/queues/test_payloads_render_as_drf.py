"""The request object and the live states are written out by hand for speed (services/payloads.py);
they must stay what DRF would render from the API's declared fields (which feed the OpenAPI schema)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from poolweb.api.representations import LivePoolSerializer, PolicyStateSerializer, RequestSerializer
from poolweb.selectors.live import policy_states, pool_states
from poolweb.services.payloads import policy_state_data, pool_state_data, request_data

from tests.poolweb.conftest import request_row

pytestmark = pytest.mark.django_db


def by_drf(serializer_class, value) -> dict:
    """What DRF renders from the declared fields, without the class's hand-written shortcut."""
    class Generic(serializer_class):
        def to_representation(self, instance):
            base = serializers.ModelSerializer if issubclass(serializer_class, serializers.ModelSerializer) \
                else serializers.Serializer
            return base.to_representation(self, instance)
    return dict(Generic(value).data)


@pytest.mark.parametrize("state, pool", [("pending", None), ("allocated", "h100"), ("preempting", "h100")])
def test_the_request_object_is_what_drf_renders_from_the_declared_fields(bob, state, pool):
    row = request_row(bob, "dev", "half", 0.143, state=state, pool=pool)
    row.labels, row.position, row.queue_pool, row.name = {"team": "nlp", "n": 3}, 4, "a100", "train-42"
    row.finished_at = dt.datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    row.save()
    row.refresh_from_db()
    assert request_data(row) == by_drf(RequestSerializer, row)
    assert list(request_data(row)) == RequestSerializer.Meta.fields


def test_the_live_states_are_what_drf_renders_from_the_declared_fields(provisioned, bob):
    request_row(bob, "dev", "4xgpu", 4, state="allocated", pool="h100")
    request_row(bob, "dev", "half", 0.5, state="allocated", pool="a100")
    request_row(bob, "dev", "half", 0.5)
    for state in pool_states():
        assert _json(pool_state_data(state)) == _json(by_drf(LivePoolSerializer, state))
    for state in policy_states():
        assert _json(policy_state_data(state)) == _json(by_drf(PolicyStateSerializer, state))


def _json(value):
    """As a client reads it: DRF renders 0.5 as a Decimal the JSON encoder writes as 0.5."""
    return json.loads(JSONRenderer().render(value))
