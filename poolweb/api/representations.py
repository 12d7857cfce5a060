"""The objects of docs/api.md §3–4 — a request, a pool's and a policy's live state — described for the
OpenAPI schema. What the API and the event stream send is built by ``services.payloads``; each
serializer here renders through it, and a test holds the two equal."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from poolweb.models import Request as RequestRow
from poolweb.services.payloads import (api_time, grace_end, policy_state_data, pool_state_data, quantities, quantity,
                                       eta_data, request_data, request_warnings)
from reconcile import State
from reconcile.eta import BASES


@extend_schema_field({"type": "object", "additionalProperties": {"type": "number", "minimum": 0},
                      "description": "resource key → quantity, step_run: 1 included"})
class ResourcesField(serializers.Field):
    def to_representation(self, milli: dict[str, int]) -> dict[str, int | float]:
        return quantities(milli)


@extend_schema_field({"type": "string", "format": "date-time", "nullable": True,
                      "description": "preempting only: when the eviction grace ends (R-44), preempted_at plus "
                                     "POOLWEB_EVICTION_GRACE_SECONDS; null otherwise"})
class GraceEndField(serializers.Field):
    def __init__(self, **kwargs):
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, row: RequestRow) -> str | None:
        return api_time(grace_end(row))


class RequestWarningSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="stable: preemptible_without_retries")
    message = serializers.CharField()


class WarningsField(serializers.ListField):
    """What its owner should know while it may still run (decision 117); an empty list when nothing."""

    def __init__(self, **kwargs):
        super().__init__(child=RequestWarningSerializer(), source="*", read_only=True, **kwargs)

    def to_representation(self, row: RequestRow) -> list[dict[str, str]]:
        return request_warnings(row.state, row.preemptible, row.max_retries)


class EtaField(serializers.Field):
    """One of the three keys of ``payloads.eta_data`` (R-54): null unless pending and judged by a pass."""

    def __init__(self, key: str, **kwargs):
        self.key = key
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, row: RequestRow) -> str | None:
        return eta_data(row.state, row.eta, row.eta_basis)[self.key]


@extend_schema_field({"type": "string", "format": "date-time", "nullable": True,
                      "description": "R-54, pending only: when it is estimated to start; null when unknown"})
class EtaAtField(EtaField):
    pass


@extend_schema_field({"type": "string", "enum": list(BASES), "nullable": True,
                      "description": "R-54: the ends the estimate relied on"})
class EtaBasisField(EtaField):
    pass


@extend_schema_field({"type": "string", "enum": ["high", "low", "none"], "nullable": True,
                      "description": "R-54: high when every end the estimate relies on is a declared run limit, "
                                     "low when one is an observed run time, none without an estimate"})
class EtaConfidenceField(EtaField):
    pass


class RequestSerializer(serializers.ModelSerializer):
    """The request object of docs/api.md §3–4, plus ``lease_seconds``, ``queue_pool``, ``grace_ends_at``,
    ``warnings``, ``submitted_by``, ``max_runtime_seconds`` and ``time_limit_at`` (R-52)."""

    owner = serializers.CharField(source="owner.username", read_only=True)
    resources = ResourcesField(read_only=True)
    labels = serializers.DictField(child=serializers.CharField(), read_only=True)
    position = serializers.SerializerMethodField()
    grace_ends_at = GraceEndField()
    warnings = WarningsField()
    eta = EtaAtField("eta")
    eta_basis = EtaBasisField("eta_basis")
    eta_confidence = EtaConfidenceField("eta_confidence")

    class Meta:
        model = RequestRow
        fields = ["id", "name", "policy", "profile", "owner", "resources", "preemptible", "max_retries", "attempt",
                  "state", "reason", "message", "pool", "position", "preempted_by", "labels", "submitted_at",
                  "allocated_at", "finished_at", "lease_expires_at", "lease_seconds", "queue_pool", "held_pool",
                  "grace_ends_at", "warnings", "submitted_by", "max_runtime_seconds", "time_limit_at", "eta",
                  "eta_basis", "eta_confidence"]
        read_only_fields = fields

    def get_position(self, row: RequestRow) -> int | None:
        """1-based place in the R-32 order on its most preferred pool; null unless pending."""
        return row.position if row.state == State.PENDING.value else None

    def to_representation(self, row: RequestRow) -> dict:
        return request_data(row)


# --- live state ------------------------------------------------------------------------------------

@extend_schema_field({"type": "object", "additionalProperties": {"type": "number", "minimum": 0}})
class QuantitiesField(serializers.Field):
    """key → milli-units, shown as key → number (2, 0.5, 0.143)."""

    def to_representation(self, value):
        return {key: quantity(amount) for key, amount in value.items()}


@extend_schema_field(OpenApiTypes.NUMBER)
class QuantityField(serializers.Field):
    """Milli-units shown as a number; null stays null."""

    def to_representation(self, value):
        return quantity(value)


class LivePoolSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    capacity = QuantitiesField(help_text="What the pool meters, per key.")
    used = QuantitiesField(help_text="Sum of the live allocations on the pool, per key the pool meters.")
    free = QuantitiesField(help_text="Per capacity key: what a new request could take: capacity minus used "
                                     "minus what is held beyond the victims' own holdings, never below 0.")
    overcommitted = QuantitiesField(
        help_text="Per key where used exceeds capacity (a provision shrank it, R-57): the excess.")
    held = QuantitiesField(help_text="Demand of preemptors whose victims are leaving, promised to them (R-45).")
    pending = serializers.IntegerField(help_text="Pending requests queued on this pool.")
    running = serializers.IntegerField(help_text="Live (allocated or preempting) requests on this pool.")

    def to_representation(self, state) -> dict:
        return pool_state_data(state)


class ScopeUsageSerializer(serializers.Serializer):
    scope = serializers.CharField(help_text='A pool name, or "*" for all pools together.')
    key = serializers.CharField()
    usage = QuantityField()
    reserved = QuantityField(allow_null=True, help_text="As stated by the quota row of this scope, if any.")
    limit = QuantityField(allow_null=True, help_text="As stated by the quota row of this scope, if any.")
    borrowed = QuantityField(help_text="Units of the usage beyond the reservation.")
    pending = serializers.IntegerField(help_text="The policy's pending requests queued at this scope.")
    running = serializers.IntegerField(help_text="The policy's live requests at this scope.")


class BudgetSerializer(serializers.Serializer):
    """A policy's budget and its burn now (docs/scheduling.md §8a)."""

    key = serializers.CharField()
    hours = QuantityField(help_text="Key-hours per period.")
    period = serializers.ChoiceField(["day", "week", "month"], help_text="UTC calendar period; a week starts Monday.")
    when_spent = serializers.ChoiceField(["refuse", "idle"])
    period_start = serializers.DateTimeField()
    resets_at = serializers.DateTimeField(help_text="When the next period starts and the burn is 0 again.")
    used = serializers.CharField(help_text="Key-hours used in the period so far, three decimals (as GET /usage).")
    used_exact = serializers.IntegerField(help_text="The same in milli-units × seconds.")
    percent = serializers.IntegerField(help_text="Whole percent of the budget used, rounded down.")
    spent = serializers.BooleanField()
    text = serializers.CharField(help_text='"612 of 1,000 GPU-hours this month, resets 1 Jan"')


class PolicyStateSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    group = serializers.CharField()
    priority = serializers.IntegerField()
    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    scopes = ScopeUsageSerializer(many=True)
    budget = BudgetSerializer(required=False, help_text="Only for a policy with a budget; not in policy.updated.")

    def to_representation(self, state) -> dict:
        return policy_state_data(state)
