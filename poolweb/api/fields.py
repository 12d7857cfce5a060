"""Fields shared by the API's schemas and small bodies: quantities as the API reads them (api.md
§1), and strict types for the bodies DRF reads."""

from __future__ import annotations

from collections.abc import Mapping

from drf_spectacular.utils import extend_schema_field
from rest_framework import exceptions, serializers


@extend_schema_field({"oneOf": [{"type": "number", "minimum": 0, "maximum": 1e12},
                                {"type": "string", "pattern": r"^[0-9]+(\.[0-9]{1,3})?$"}],
                      "description": "a quantity ≥ 0, at most 3 decimals and 10^12; responses use numbers"})
class QuantityInput(serializers.Field):
    """A quantity in a request body: a JSON number or a decimal string. Read by the engine's
    parser (reconcile.quantity), not by DRF: this field only documents it."""


# Small bodies read by DRF serializers: strict types (DRF would turn 1 into "1" and "yes" into
# true), and unknown fields refused, as every other body of the API refuses them.


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid_type": "Must be a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid_type")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    default_error_messages = {"invalid_type": "Must be true or false."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid_type")
        return data


class StrictBody(serializers.Serializer):
    """A JSON object of the declared fields only: another field is a 400 ``unknown_field``."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            known = ", ".join(self.fields) or "none"
            unknown = {str(name)[:40]: [exceptions.ErrorDetail(
                f"{str(name)[:40]!r} is not a field of this body; the fields are {known}", code="unknown_field")]
                for name in data if name not in self.fields}
            if unknown:
                raise exceptions.ValidationError(unknown)
        return super().to_internal_value(data)
