"""``GET /requests?label=k=v`` (decision 140): whether a request's ``labels`` hold a key with a
given value, on both databases, for any key the submission accepts.

Django has no lookup that does this everywhere: ``labels__contains`` is PostgreSQL's ``@>`` and
refused on SQLite, and a key transform (``labels__k``) reads a key of digits as an array index
(``$[0]``, ``-> 0``: the label ``0`` matched nothing) and puts the key into SQLite's JSON path,
where a ``"`` in it matched nothing either. So each database gets its own condition here:

- PostgreSQL: ``labels @> '{"k": "v"}'``, jsonb containment (a string value contains only itself);
- SQLite: ``EXISTS`` a member of ``json_each(labels)`` with that key whose value is that string.

Both take the key and the value as parameters, whatever characters they hold.
"""

from __future__ import annotations

import json

from django.db.models import F, Lookup


class HasLabel(Lookup):
    """``labels`` has ``key`` with the string ``value``: ``rows.filter(HasLabel(F("labels"), (key, value)))``."""

    lookup_name = "has_label"
    prepare_rhs = False  # the (key, value) pair is not one value of the field

    def as_sql(self, compiler, connection):  # SQLite
        column, params = self.process_lhs(compiler, connection)
        key, value = self.rhs
        return (f"EXISTS (SELECT 1 FROM json_each({column}) AS label WHERE label.key = %s "
                f"AND label.type = 'text' AND label.value = %s)", (*params, key, value))

    def as_postgresql(self, compiler, connection):
        column, params = self.process_lhs(compiler, connection)
        key, value = self.rhs
        return f"({column} @> %s::jsonb)", (*params, json.dumps({key: value}))


def has_label(key: str, value: str) -> HasLabel:
    """The condition on ``Request.labels`` (``filter(has_label("team", "nlp"))``)."""
    return HasLabel(F("labels"), (key, value))
