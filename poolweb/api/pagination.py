"""Pages of a list (``limit``/``offset``), for every list endpoint, read strictly in one place:
``limit`` an integer ≥ 1 (above 1000 it is cut to 1000), ``offset`` an integer ≥ 0, anything
else a 400 naming the parameter. DRF imports this from its settings while
``rest_framework.views`` is still loading, so it imports nothing of the API."""

from __future__ import annotations

import re

from rest_framework import exceptions
from rest_framework.pagination import LimitOffsetPagination

NUMBER = re.compile(r"[0-9]{1,18}")  # larger would reach the database as an overflowing LIMIT/OFFSET


class Pagination(LimitOffsetPagination):
    max_limit = 1000

    def get_limit(self, request) -> int:
        value = request.query_params.get(self.limit_query_param)
        return self.default_limit if value is None else min(_number(value, "limit", 1), self.max_limit)

    def get_offset(self, request) -> int:
        value = request.query_params.get(self.offset_query_param)
        return 0 if value is None else _number(value, "offset", 0)


def _number(value: str, name: str, low: int) -> int:
    if NUMBER.fullmatch(value) and int(value) >= low:
        return int(value)
    raise exceptions.ValidationError({name: [exceptions.ErrorDetail(f"{name} must be an integer ≥ {low}",
                                                                    code="invalid")]})
