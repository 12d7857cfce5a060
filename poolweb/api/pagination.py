"""Pages of a list (``limit``/``offset``), for every list endpoint. DRF imports this from its
settings while ``rest_framework.views`` is still loading, so it imports nothing of the API."""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    max_limit = 1000  # an unbounded limit would reach the database as an overflowing LIMIT
