"""The event outbox as a reader of the stream's starting point sees it: the newest seq. The
stream starts clients there, and a page rendered now follows the stream from there, so that
nothing committed after its render is missed."""

from __future__ import annotations

from poolweb import sql
from poolweb.models import Event


def newest_seq() -> int:
    """The newest seq handed out: "now" for a client that starts, the point a resume is measured
    against. The newest kept row's; when none is kept (a new install, or every row deleted by
    hand), the table's sequence, so that rows written later never look like missed ones."""
    newest = Event.objects.order_by("-seq").values_list("seq", flat=True).first()
    return newest if newest is not None else sql.sequence_high_water()
