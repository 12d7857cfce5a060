"""The event stream at ``/ws/events/`` (docs/events.md): from the outbox table to the browser.

Decisions write ``Event`` rows in their own transaction (``services.events``), in any process.
Each web process runs one relay (``relay.py``) that reads new rows every few milliseconds and
hands them to the connected consumers (``consumer.py``), each of which keeps what its user may
see. A client that resumes, or falls behind, reads the missed rows straight from the outbox
(``outbox.py``). The database is the only thing the processes share: no Redis, no channel layer.
"""
