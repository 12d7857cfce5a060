"""The objects of api.md §2 — a request, a pool's and a policy's live state — as the API answers
them and the event stream sends them. Only serializers here: the event writers import this
without pulling in DRF's views."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal

from drf_spectacular.types import OpenApiTypes
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

    def to_representation(self, row: RequestRow) -> dict:
        return request_data(row)


def request_data(row: RequestRow) -> dict:
    """The request object, as RequestSerializer's fields would render it (a test holds them
    equal), written out: DRF's generic walk costs about a millisecond a row, and one pass can
    announce ten thousand requests."""
    return {
        "id": row.pk, "name": row.name, "policy": row.policy, "profile": row.profile,
        "owner": row.owner.username, "resources": ResourcesField().to_representation(row.resources),
        "preemptible": row.preemptible, "max_retries": row.max_retries, "attempt": row.attempt,
        "state": row.state, "reason": row.reason, "message": row.message, "pool": row.pool,
        "position": row.position if row.state == State.PENDING.value else None,
        "preempted_by": row.preempted_by, "labels": {key: str(value) for key, value in row.labels.items()},
        "submitted_at": _moment(row.submitted_at), "allocated_at": _moment(row.allocated_at),
        "finished_at": _moment(row.finished_at), "lease_expires_at": _moment(row.lease_expires_at),
        "lease_seconds": row.lease_seconds, "queue_pool": row.queue_pool,
    }


def _moment(value: datetime | None) -> str | None:
    """As DRF writes a datetime with TIME_ZONE UTC: ISO 8601, ``Z`` for +00:00."""
    if value is None:
        return None
    text = value.astimezone(timezone.utc).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _number(value: int | Decimal) -> int | float:
    return value if isinstance(value, int) else float(value)  # ≤ 3 decimals: the float prints exactly


# --- live state ------------------------------------------------------------------------------------

@extend_schema_field({"type": "object", "additionalProperties": {"type": "number", "minimum": 0}})
class QuantitiesField(serializers.Field):
    """key → milli-units, shown as key → number (2, 0.5, 0.143)."""

    def to_representation(self, value):
        return {key: format_quantity(amount) for key, amount in value.items()}


@extend_schema_field(OpenApiTypes.NUMBER)
class QuantityField(serializers.Field):
    """Milli-units shown as a number; null stays null."""

    def to_representation(self, value):
        return format_quantity(value)


class LivePoolSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    capacity = QuantitiesField(help_text="What the pool meters, per key.")
    used = QuantitiesField(help_text="Sum of the live allocations on the pool, per key the pool meters.")
    free = QuantitiesField(help_text="Per capacity key: capacity minus used, never below 0.")
    overcommitted = QuantitiesField(
        help_text="Per key where used exceeds capacity (a provision shrank it, R-57): the excess.")
    held = QuantitiesField(help_text="Demand held for preemptors whose victims are still on the pool (R-45).")
    pending = serializers.IntegerField(help_text="Pending requests queued on this pool.")
    running = serializers.IntegerField(help_text="Live (allocated or preempting) requests on this pool.")


class ScopeUsageSerializer(serializers.Serializer):
    scope = serializers.CharField(help_text='A pool name, or "*" for all pools together.')
    key = serializers.CharField()
    usage = QuantityField()
    reserved = QuantityField(allow_null=True, help_text="As stated by the quota row of this scope, if any.")
    limit = QuantityField(allow_null=True, help_text="As stated by the quota row of this scope, if any.")
    borrowed = QuantityField(help_text="Units of the usage beyond the reservation.")
    pending = serializers.IntegerField(help_text="The policy's pending requests queued at this scope.")
    running = serializers.IntegerField(help_text="The policy's live requests at this scope.")


class PolicyStateSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    group = serializers.CharField()
    priority = serializers.IntegerField()
    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    scopes = ScopeUsageSerializer(many=True)
