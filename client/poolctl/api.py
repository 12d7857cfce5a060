"""The REST API (docs/api.md) and the event stream (docs/events.md), one call and one answer at a
time: ``Api`` is what the modules that follow a request over time (``watch``) and hold capacity
(``allocation``) build on; ``poolctl.Client`` adds those two to it::

    api = Api()                                     # POOLWEB_URL / POOLWEB_TOKEN, or `poolctl login`
    request = api.submit(policy="dev", profile="half")
    api.get(request), api.heartbeat(request), api.release(request)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

from poolctl.config import resolve
from poolctl.errors import NotFound, PermissionRefused
from poolctl.models import (Account, ActionResult, BatchResult, PolicyState, Pool, Preview, Request, UsageReport,
                            Validation, Version)
from poolctl.stream import EventStream
from poolctl.transport import Transport

RequestRef = int | Request
PAGE = 200
BATCH_MOST = 500  # items the server takes in one POST /requests/batch or /requests/actions


def submission_body(*, policy: str, profile: str, preemptible: bool = True, max_retries: int = 0,
                    **optional: Any) -> dict[str, Any]:
    """``POST /requests``' body: what ``Api.submit`` takes but the key; the options left None are
    left out."""
    body: dict[str, Any] = {"policy": policy, "profile": profile, "preemptible": preemptible,
                            "max_retries": max_retries}
    body.update({key: value for key, value in optional.items() if value is not None})
    return body


def request_id(request: RequestRef) -> int:
    return request.id if isinstance(request, Request) else int(request)


def action_body(request: RequestRef, action: str) -> dict[str, Any]:
    """What a heartbeat, release or cancel of ``request`` says besides its id: a ``Request``'s
    attempt for heartbeat and release (decision 9), so an old run never renews or gives back the
    next attempt; nothing for cancel, or for a bare id (the current attempt)."""
    return {"attempt": request.attempt} if action != "cancel" and isinstance(request, Request) else {}


class Api:
    def __init__(self, url: str | None = None, token: str | None = None, *, timeout: float = 30.0) -> None:
        """``url`` is the server's root (``http://127.0.0.1:8000``); what is not given comes from
        ``POOLWEB_URL`` and ``POOLWEB_TOKEN``, then from the file ``poolctl login`` wrote."""
        settings = resolve(url, token)
        self.url, self.token = settings.url, settings.token
        self.transport = Transport(self.url, self.token, timeout=timeout)

    def event_stream(self) -> EventStream:
        return EventStream(self.url, self.token)

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Api:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- requests -------------------------------------------------------------------------------

    def submit(self, *, policy: str, profile: str, resources: dict[str, float] | None = None,
               resource_settings: dict[str, Any] | None = None, preemptible: bool = True, max_retries: int = 0,
               lease_seconds: int | None = None, name: str | None = None, labels: dict[str, str] | None = None,
               idempotency_key: str | None = None, owner: str | None = None,
               max_runtime_seconds: int | None = None) -> Request:
        """A new request, ``pending``, already ``allocated``, or ``rejected`` with its reason (R-14).

        ``resources`` or ``resource_settings`` (``gpu_count``, ``cpu_count``, ``memory`` like
        ``"16GiB"``, ``pool_resources``) are for dynamic profiles only. A retry after a lost answer
        returns the same request: every submission carries an ``Idempotency-Key``. ``owner`` (a
        username) submits for that user, with the permission ``poolweb.submit_for_others``.
        ``max_runtime_seconds`` is its run limit (R-52).
        """
        body = submission_body(policy=policy, profile=profile, resources=resources,
                               resource_settings=resource_settings, preemptible=preemptible, max_retries=max_retries,
                               lease_seconds=lease_seconds, name=name, labels=labels, owner=owner,
                               max_runtime_seconds=max_runtime_seconds)
        key = idempotency_key or str(uuid.uuid4())
        return Request.from_json(self.transport.call("POST", "/requests", body, headers={"Idempotency-Key": key}))

    def submit_batch(self, items: Iterable[dict[str, Any]]) -> list[BatchResult]:
        """Submit many requests in few calls (``POST /requests/batch``, ``BATCH_MOST`` a call): each
        item takes ``submit``'s keyword arguments; the results in item order, each its request or
        why not (``BatchResult``) — one refused item refuses no other. An item without an
        ``idempotency_key`` gets one, so a whole batch retried after a lost answer is harmless
        only with keys of the caller's own (a job's id, say)."""
        bodies = [{**submission_body(**{k: v for k, v in item.items() if k != "idempotency_key"}),
                   "idempotency_key": item.get("idempotency_key") or str(uuid.uuid4())} for item in items]
        results: list[BatchResult] = []
        for start in range(0, len(bodies), BATCH_MOST):
            answer = self.transport.call("POST", "/requests/batch", {"requests": bodies[start:start + BATCH_MOST]})
            results += [BatchResult.from_json(result) for result in answer["results"]]
        return results

    def get(self, request: RequestRef) -> Request:
        return Request.from_json(self.transport.call("GET", f"/requests/{request_id(request)}"))

    def list(self, *, state: str | list[str] | None = None, policy: str | None = None, profile: str | None = None,
             pool: str | None = None, owner: str | None = None, labels: Mapping[str, str] | None = None,
             limit: int = 100, page: int = PAGE) -> list[Request]:
        """Your requests (admins: everyone's), newest first, at most ``limit``, ``page`` a call (the
        server's most is 1000); with ``labels``, only those that have every one of them."""
        states = ",".join(state) if isinstance(state, list) else state
        params = {"state": states, "policy": policy, "profile": profile, "pool": pool, "owner": owner,
                  "label": [f"{key}={value}" for key, value in (labels or {}).items()] or None}
        return [Request.from_json(item) for item in self._pages("/requests", params, limit, page)]

    def heartbeat(self, request: RequestRef) -> Request:
        """Renew the lease (R-50); ``Conflict`` unless the request is live — and, given a
        ``Request``, unless its attempt is still the current one (a re-queued request's old run
        learns that it must stop)."""
        return self._act(request, "heartbeat")

    def release(self, request: RequestRef) -> Request:
        """Done, or acknowledging preemption (R-51); idempotent. Given a ``Request``, only its
        attempt is released: a late release never throws away the next attempt."""
        return self._act(request, "release")

    def cancel(self, request: RequestRef) -> Request:
        """Withdraw (R-51); idempotent."""
        return self._act(request, "cancel")

    def act_many(self, action: str, requests: Iterable[RequestRef]) -> list[ActionResult]:
        """``heartbeat``, ``release`` or ``cancel`` many requests in few calls
        (``POST /requests/actions``, ``BATCH_MOST`` a call): the results in order, each the
        request afterwards or why not, as ``heartbeat`` … would have raised it (``ActionResult``:
        404, 409, 400) — one refused item refuses no other. A ``Request`` carries its attempt as
        for ``heartbeat`` and ``release``. Safe to send again: each action is idempotent."""
        items = [{"id": request_id(request), **action_body(request, action)} for request in requests]
        results: list[ActionResult] = []
        for start in range(0, len(items), BATCH_MOST):
            answer = self.transport.call("POST", "/requests/actions",
                                         {"action": action, "requests": items[start:start + BATCH_MOST]})
            results += [ActionResult.from_json(result) for result in answer["results"]]
        return results

    def _act(self, request: RequestRef, action: str) -> Request:
        body = action_body(request, action) or None
        return Request.from_json(self.transport.call("POST", f"/requests/{request_id(request)}/{action}", body))

    # --- live state -----------------------------------------------------------------------------

    def pools(self) -> list[Pool]:
        return [Pool.from_json(item) for item in self.transport.call("GET", "/pools")]

    def queue(self, pool: str, limit: int = 1000) -> list[Request]:
        """The pool's pending requests in service order: others' with their public fields only."""
        path = f"/pools/{quote(pool, safe='')}/queue"
        return [Request.from_json(item) for item in self._pages(path, {}, limit)]

    def policies(self) -> list[PolicyState]:
        return [PolicyState.from_json(item) for item in self.transport.call("GET", "/policies")]

    def usage(self, since: str | None = None, until: str | None = None, by: str = "policy") -> UsageReport:
        """Key-hours of a period in share and borrowed (``GET /usage``, docs/usage.md); ``since`` and
        ``until`` as the server reads them (ISO 8601 dates or times; default: the last 30 days)."""
        return UsageReport.from_json(self.transport.call("GET", "/usage", params=usage_params(since, until, by)))

    def usage_csv(self, since: str | None = None, until: str | None = None, by: str = "policy") -> str:
        """The same rows as the server's CSV."""
        return self.transport.call("GET", "/usage", params=usage_params(since, until, by),
                                   headers={"Accept": "text/csv"})

    # --- configuration (admins) -----------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The provisioned configuration document, with its ``version``."""
        return self.transport.call("GET", "/config")

    def draft(self) -> dict[str, Any]:
        return self.transport.call("GET", "/config/draft")

    def save_draft(self, document: dict[str, Any]) -> dict[str, Any]:
        """Replace the draft; saved even when invalid (``validate`` says what provision would refuse)."""
        return self.transport.call("PUT", "/config/draft", document)

    def validate(self) -> Validation:
        return Validation.from_json(self.transport.call("POST", "/config/draft/validate"))

    def preview(self) -> Preview:
        return Preview.from_json(self.transport.call("POST", "/config/draft/preview"))

    def provision(self, comment: str = "") -> int:
        """Publish the draft; the new version number. Not repeated on a dropped connection: the
        draft is gone once provisioned."""
        return self.transport.call("POST", "/config/draft/provision", {"comment": comment}, retry=False)["version"]

    def versions(self, limit: int = 100) -> list[Version]:
        return [Version.from_json(item) for item in self._pages("/config/versions", {}, limit)]

    def restore(self, version: int) -> dict[str, Any]:
        """Copy version ``version`` into the draft (rollback = restore + provision)."""
        return self.transport.call("POST", f"/config/versions/{int(version)}/restore")

    def me(self) -> Account | None:
        """Who the token signs in as; None from a server older than ``GET /me``. A bad token raises
        ``AuthenticationFailed``."""
        try:
            return Account.from_json(self.transport.call("GET", "/me"))
        except NotFound:
            return None

    def is_admin(self) -> bool:
        """Whether the token's user is an admin: ``GET /me``, or on an older server whether it may
        read what only an admin may (``GET /management``)."""
        account = self.me()
        if account is not None:
            return account.is_admin
        try:
            self.management()
        except PermissionRefused:
            return False
        return True

    def management(self, enabled: bool | None = None) -> bool:
        """Whether the reconciler grants and preempts; switched when ``enabled`` is given."""
        if enabled is None:
            return bool(self.transport.call("GET", "/management")["enabled"])
        return bool(self.transport.call("PUT", "/management", {"enabled": enabled})["enabled"])

    def _pages(self, path: str, params: dict[str, Any], limit: int, size: int = PAGE) -> Iterator[dict[str, Any]]:
        """The items of a paginated list, page after page of ``size``, until ``limit`` of them."""
        offset = 0
        while offset < limit:
            page = self.transport.call("GET", path, params={**params, "limit": min(size, limit - offset),
                                                            "offset": offset})
            items = page["results"] if isinstance(page, dict) else page
            yield from items
            offset += len(items)
            if not isinstance(page, dict) or not page.get("next") or not items:
                return


def usage_params(since: str | None, until: str | None, by: str) -> dict[str, str | None]:
    return {"since": since, "until": until, "by": by}
