"""Two readers the document's entries share: a field's place in an error path (``child``, also
resource_settings'), and a pool's ``labels`` (decision 137).

>>> from reconcile.document_checks import Reading
>>> reading = Reading()
>>> read_labels(reading, {"labels": {"slurm_partition": "gpu", "Rack": "b7"}}, "pools[0]")
(('slurm_partition', 'gpu'),)
>>> [(issue.path, issue.code) for issue in reading.errors]
[('pools[0].labels.Rack', 'invalid_key')]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .document_checks import Reading, json_type, show

_PLAIN_FIELD = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # a field name shown in a path (``child``)
MAX_LABELS, MAX_LABEL_VALUE = 20, 200  # a pool's labels; a key is LABEL_KEY_PATTERN's
LABEL_KEY_PATTERN = re.compile(r"[a-z0-9][a-z0-9_./-]{0,62}")  # matched whole (fullmatch)
LABEL_KEY_RULE = "1 to 63 lower-case letters, digits, '.', '_', '/' or '-', the first a letter or digit"
MISSING: Any = object()


def read_labels(reading: Reading, obj: Mapping[Any, Any], path: str) -> tuple[tuple[str, str], ...]:
    """``labels``: an object of key → text, sorted by key."""
    raw, at = obj.get("labels", MISSING), f"{path}.labels"
    if raw is MISSING:
        return ()
    if not isinstance(raw, Mapping):
        reading.error(at, "invalid_type", f"labels is an object of key → text, not {json_type(raw)}")
        return ()
    if len(raw) > MAX_LABELS:
        reading.error(at, "too_many", f"labels has {len(raw)} keys, at most {MAX_LABELS} are allowed")
        return ()
    labels = []
    for key, value in raw.items():
        if not (isinstance(key, str) and LABEL_KEY_PATTERN.fullmatch(key)):
            reading.error(child(at, key), "invalid_key", f"{show(key)} is not a label key: {LABEL_KEY_RULE}")
        elif not isinstance(value, str):
            reading.error(f"{at}.{key}", "invalid_type", f"label {key} is a string, not {json_type(value)}")
        elif len(value) > MAX_LABEL_VALUE:
            reading.error(f"{at}.{key}", "too_long", f"label {key} has {len(value)} characters, "
                                                     f"at most {MAX_LABEL_VALUE} are allowed")
        else:
            labels.append((key, value))
    return tuple(sorted(labels))


def child(path: str, field: object) -> str:
    """``path.field``, or ``path`` alone when the field is not a short plain string (here and in
    resource_settings, so a field is named the same way in every error path)."""
    if isinstance(field, str) and _PLAIN_FIELD.fullmatch(field):
        return f"{path}.{field}" if path else field
    return path
