"""The request object is written out by hand for speed; it must stay what DRF would render from
RequestSerializer's declared fields (which also feed the OpenAPI schema)."""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework import serializers

from poolweb.api.representations import RequestSerializer, request_data

from .conftest import request_row

pytestmark = pytest.mark.django_db


class ByDrf(RequestSerializer):
    def to_representation(self, row):
        return serializers.ModelSerializer.to_representation(self, row)


@pytest.mark.parametrize("state, pool", [("pending", None), ("allocated", "h100"), ("preempting", "h100")])
def test_the_request_object_is_what_drf_renders_from_the_declared_fields(bob, state, pool):
    row = request_row(bob, "dev", "half", 0.143, state=state, pool=pool)
    row.labels, row.position, row.queue_pool, row.name = {"team": "nlp", "n": 3}, 4, "a100", "train-42"
    row.finished_at = dt.datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    row.save()
    row.refresh_from_db()
    assert request_data(row) == dict(ByDrf(row).data)
    assert list(request_data(row)) == RequestSerializer.Meta.fields
