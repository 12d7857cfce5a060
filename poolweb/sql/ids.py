"""``GET /audit?request=12`` (decision 158): whether an audit entry's ``request_ids``, a JSON list
of integers, holds an id, on both databases — the one entry of a batch lists them all. Django's
``__contains`` on a JSON field is PostgreSQL's ``@>`` only, so each database has its condition:

- PostgreSQL: ``request_ids @> '[12]'``, jsonb containment;
- SQLite: ``EXISTS`` a member of ``json_each(request_ids)`` equal to 12.
"""

from __future__ import annotations

import json

from django.db.models import F, Lookup


class HoldsId(Lookup):
    """``request_ids`` holds the integer ``rhs``: ``rows.filter(holds_id("request_ids", 12))``."""

    lookup_name = "holds_id"
    prepare_rhs = False

    def as_sql(self, compiler, connection):  # SQLite
        column, params = self.process_lhs(compiler, connection)
        return (f"EXISTS (SELECT 1 FROM json_each({column}) AS member WHERE member.type = 'integer' "
                f"AND member.value = %s)", (*params, self.rhs))

    def as_postgresql(self, compiler, connection):
        column, params = self.process_lhs(compiler, connection)
        return f"({column} @> %s::jsonb)", (*params, json.dumps([self.rhs]))


def holds_id(field: str, value: int) -> HoldsId:
    return HoldsId(F(field), value)
