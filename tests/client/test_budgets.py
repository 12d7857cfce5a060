"""``poolctl policies`` against a live server: a budgeted policy's burn-down under the table, and
in ``--json`` as the server writes it (a policy without a budget has no such field)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from poolweb.selectors.versions import config_live_document
from poolweb.services import config as config_services

pytestmark = pytest.mark.slow


@pytest.fixture
def budgeted(live):
    document = config_live_document()
    del document["version"]
    document["policies"][0]["budget"] = {"hours": 1000, "period": "month", "when_spent": "idle"}
    config_services.config_provision_document(document=document, author=User.objects.get(username="alice"))
    return document["policies"][0]["name"], document["policies"][1]["name"]


def test_policies_shows_each_budgets_burn_down(poolctl, budgeted):
    name, other = budgeted
    done = poolctl("policies")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    (line,) = [line for line in lines if "budget:" in line]
    assert line.startswith(f"{name} budget: 0 of 1,000 GPU-hours this month, resets 1 ") and line.endswith("(0 %)")
    listed = {p["name"]: p for p in json.loads(poolctl("--json", "policies").stdout)}
    assert listed[name]["budget"]["when_spent"] == "idle" and listed[name]["budget"]["used_exact"] == 0
    assert "budget" not in listed[other]
