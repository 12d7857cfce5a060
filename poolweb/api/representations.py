"""The request object of api.md §2, as the API answers it and the event stream sends it."""

from __future__ import annotations

from decimal import Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from poolweb.models import Request as RequestRow
from reconcile import State, format_quantity


@extend_schema_field({"type": "object", "additionalProperties": {"type": "number", "minimum": 0},
                      "description": "resource key → quantity, step_run: 1 included"})
class ResourcesField(serializers.Field):
    def to_representation(self, milli: dict[str, int]) -> dict[str, int | float]:
        return {key: _number(format_quantity(value)) for key, value in sorted(milli.items()) if value}


class RequestSerializer(serializers.ModelSerializer):
    """The request object of api.md §2, plus ``lease_seconds`` and ``queue_pool``."""

    owner = serializers.CharField(source="owner.username", read_only=True)
    resources = ResourcesField(read_only=True)
    labels = serializers.DictField(child=serializers.CharField(), read_only=True)
    position = serializers.SerializerMethodField()

    class Meta:
        model = RequestRow
        fields = ["id", "name", "policy", "profile", "owner", "resources", "preemptible", "max_retries", "attempt",
                  "state", "reason", "message", "pool", "position", "preempted_by", "labels", "submitted_at",
                  "allocated_at", "finished_at", "lease_expires_at", "lease_seconds", "queue_pool"]
        read_only_fields = fields

    def get_position(self, row: RequestRow) -> int | None:
        """1-based place in the R-32 order on its most preferred pool; null unless pending."""
        return row.position if row.state == State.PENDING.value else None


def request_data(row: RequestRow) -> dict:
    return RequestSerializer(row).data


def _number(value: int | Decimal) -> int | float:
    return value if isinstance(value, int) else float(value)  # ≤ 3 decimals: the float prints exactly
