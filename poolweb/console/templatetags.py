"""Template filters of the console (``{% load console %}``)."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

register = template.Library()


@register.filter
def ago(moment: datetime | None) -> str:
    """"just now", "3 minutes ago", "2 days ago": the largest unit only (the exact time is in the
    element's title)."""
    if moment is None:
        return ""
    if (timezone.now() - moment).total_seconds() < 60:
        return "just now"
    return f"{timesince(moment, depth=1)} ago"
