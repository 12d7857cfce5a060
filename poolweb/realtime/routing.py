"""Websocket routes: the event stream, and a plain refusal for any other path."""

from __future__ import annotations

from channels.security.websocket import WebsocketDenier
from django.urls import path, re_path

from poolweb.realtime.consumer import EventStreamConsumer

websocket_urlpatterns = [
    path("ws/events/", EventStreamConsumer.as_asgi()),
    re_path(r"", WebsocketDenier.as_asgi()),  # an unknown path is refused, not an error in the log
]
