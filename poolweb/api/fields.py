"""Fields shared by the API's schemas: quantities as the API reads them (api.md §1)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


@extend_schema_field({"oneOf": [{"type": "number", "minimum": 0, "maximum": 1e12},
                                {"type": "string", "pattern": r"^[0-9]+(\.[0-9]{1,3})?$"}],
                      "description": "a quantity ≥ 0, at most 3 decimals and 10^12; responses use numbers"})
class QuantityInput(serializers.Field):
    """A quantity in a request body: a JSON number or a decimal string. Read by the engine's
    parser (reconcile.quantity), not by DRF: this field only documents it."""
