"""The demo configuration ``make run`` provisions on an empty database.

Two pools (an H100 box with metered CPUs, an A100 box), fractional and multi-GPU profiles, a
dynamic profile whose requests state their own amounts, and two teams with reservations and
limits. Each policy's ``group`` is a Django group of the same name (``DEMO_GROUPS``), created by
``manage.py bootstrap``; add users to it to let them submit.

Reservations: research 6 of 12 GPUs over all pools (at most 8 of them on h100), dev 4 (limit 8);
together 10 of 12, so 2 GPUs are nobody's share and both teams can borrow.
"""

from __future__ import annotations

import copy
from typing import Any

from django.contrib.auth.models import Group

from poolweb.models import ConfigVersion
from poolweb.services.config import config_provision_document

DEMO_COMMENT = "demo configuration"
DEMO_GROUPS = ("research", "dev")

_DOCUMENT: dict[str, Any] = {
    "pools": [
        {"name": "h100", "description": "8 × H100 80GB, 256 CPUs",
         "capacity": {"gpu": 8, "mcpu": 256000}, "execution_order": ["8xgpu", "2xgpu"]},
        {"name": "a100", "description": "4 × A100 40GB", "capacity": {"gpu": 4}},
    ],
    "profiles": [
        {"name": "half", "description": "half a GPU, for notebooks and small inference",
         "resources": {"gpu": 0.5, "mcpu": 8000},
         "connections": [{"pool": "a100", "name": "½ A100"}, {"pool": "h100", "name": "½ H100"}],
         "policies": ["dev", "research"]},
        {"name": "2xgpu", "description": "two GPUs, for fine-tuning",
         "resources": {"gpu": 2, "mcpu": 32000},
         "connections": [{"pool": "h100", "name": "2 × H100"}, {"pool": "a100", "name": "2 × A100"}],
         "policies": ["research", "dev"]},
        {"name": "8xgpu", "description": "a whole H100 box, for pre-training",
         "resources": {"gpu": 8, "mcpu": 128000},
         "connections": [{"pool": "h100", "name": "8 × H100"}],
         "policies": ["research"]},
        {"name": "job", "description": "a batch job that states its own gpu, mcpu and memory_mb",
         "resources": {"gpu": 1, "mcpu": 4000}, "dynamic": True,
         "connections": [{"pool": "a100"}, {"pool": "h100"}],
         "policies": ["dev", "research"]},
    ],
    "policies": [
        {"name": "research", "description": "the research team", "group": "research", "priority": 10,
         "quotas": [{"scope": "*", "key": "gpu", "reserved": 6, "limit": 12},
                    {"scope": "h100", "key": "gpu", "limit": 8}]},
        {"name": "dev", "description": "the product team", "group": "dev", "priority": 0,
         "quotas": [{"scope": "*", "key": "gpu", "reserved": 4, "limit": 8},
                    {"scope": "h100", "key": "mcpu", "limit": 128000}]},
    ],
}


def demo_document() -> dict[str, Any]:
    """A fresh copy of the demo document (callers may change it)."""
    return copy.deepcopy(_DOCUMENT)


def demo_provision(*, author) -> ConfigVersion | None:
    """Create the demo's groups and provision the demo as the first version, exactly as the
    configuration service provisions any document; None (and nothing written) once any version
    exists. ``ConfigInvalid`` if the demo ever stops validating (a test guards against that).

    Not one transaction: the service validates before taking the write lock and asks for a
    reconcile pass after its commit. Two bootstraps racing could at worst provision the demo twice.
    """
    if ConfigVersion.objects.exists():
        return None
    for name in DEMO_GROUPS:  # first, so the policies' groups exist when the version is checked
        Group.objects.get_or_create(name=name)
    return config_provision_document(document=demo_document(), author=author, comment=DEMO_COMMENT)
