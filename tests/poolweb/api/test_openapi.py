"""The OpenAPI schema (/api/schema/) and docs (/api/docs/) match reality.

1. The schema generates and validates with no warning (``spectacular --validate --fail-on-warn``).
2. Every path and method of api.md §2 is in it.
3. A schema-driven fuzz run (schemathesis) against the real WSGI application, as alice (admin,
   reaching every endpoint) and as bob (a team member), finds no 5xx. It runs in a
   transactional test so the real commit paths run (``on_commit`` included), and it is bounded:
   a fixed number of examples per operation, derandomized so a run is reproducible.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Iterator

import pytest
import requests
import schemathesis
from django.core.management import call_command
from hypothesis import HealthCheck, Phase, given, reject, settings, strategies as st
from rest_framework.test import APIClient
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from poolweb.models import ApiToken, Request as RequestRow
from poolweb.services.reconciler import reconcile_pass
from poolweb.services.tokens import digest, token_issue
from poolweb.wsgi import application

from tests.poolweb.conftest import document

BASE = "/api/v1"

# api.md §2, as written there: (method, path). Path parameters are compared by position only.
API_MD_OPERATIONS = [
    ("GET", "/config"),
    ("GET", "/config/draft"), ("PUT", "/config/draft"), ("DELETE", "/config/draft"),
    ("POST", "/config/draft/validate"), ("POST", "/config/draft/preview"), ("POST", "/config/draft/provision"),
    ("GET", "/config/versions"), ("GET", "/config/versions/{n}"), ("POST", "/config/versions/{n}/restore"),
    ("GET", "/management"), ("PUT", "/management"),
    ("POST", "/requests"), ("POST", "/requests/batch"), ("POST", "/requests/actions"), ("GET", "/requests"),
    ("GET", "/requests/{id}"),
    ("POST", "/requests/{id}/heartbeat"), ("POST", "/requests/{id}/release"), ("POST", "/requests/{id}/cancel"),
    ("GET", "/pools"), ("GET", "/pools/{name}/queue"), ("GET", "/pools/{name}/running"), ("GET", "/policies"),
    ("GET", "/usage"), ("GET", "/requests/{id}/history"), ("GET", "/health"), ("GET", "/audit"),
    ("GET", "/tokens"), ("POST", "/tokens"), ("DELETE", "/tokens/{id}"),
]

EXAMPLES = {"alice": 30, "bob": 10}  # per operation


def template(path: str) -> str:
    """``/config/versions/{number}`` → ``/config/versions/{}``: parameter names may differ."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def generated_schema() -> dict:
    response = APIClient().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def schema_operations(schema: dict) -> set[tuple[str, str]]:
    methods = {"get", "put", "post", "patch", "delete"}
    return {(method.upper(), template(path.removeprefix(BASE)))
            for path, operations in schema["paths"].items() for method in operations if method in methods}


# --- the schema ------------------------------------------------------------------------------

@pytest.mark.django_db
def test_the_schema_generates_and_validates_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))

    assert (tmp_path / "schema.yaml").read_text().startswith("openapi: 3")


@pytest.mark.django_db
@pytest.mark.parametrize("method,path", API_MD_OPERATIONS, ids=[f"{m} {p}" for m, p in API_MD_OPERATIONS])
def test_every_operation_of_api_md_is_in_the_schema(method, path):
    assert (method, template(path)) in schema_operations(generated_schema())


@pytest.mark.django_db
def test_the_schema_documents_bearer_tokens_and_sessions():
    schemes = generated_schema()["components"]["securitySchemes"]

    assert schemes["bearerAuth"] == {"type": "http", "scheme": "bearer", "description": schemes["bearerAuth"]["description"]}
    assert schemes["cookieAuth"]["in"] == "cookie"


@pytest.mark.django_db
def test_the_interactive_docs_are_served():
    response = APIClient().get("/api/docs/")

    assert response.status_code == 200
    assert "swagger-ui" in response.content.decode()


# --- the fuzz run ----------------------------------------------------------------------------

def fuzz_targets() -> Iterator:
    for persona in EXAMPLES:
        for method, path in [*API_MD_OPERATIONS, ("*", "operations beyond api.md")]:
            yield pytest.param(persona, method, path, id=f"{persona}: {method} {path}")


class Credential:
    """A persona's bearer token, issued again when a fuzzed ``DELETE /tokens/{id}`` revoked it."""

    def __init__(self, user) -> None:
        self.user, self.token = user, token_issue(user=user)

    def header(self) -> str:
        if not ApiToken.objects.filter(digest=digest(self.token)).exists():
            self.token = token_issue(user=self.user)
        return f"Bearer {self.token}"


@pytest.fixture
def world(provisioned, alice, bob, carol) -> dict:
    """The demo configuration live, a saved draft, and requests pending, allocated and
    preempting (research outranks dev on the full h100) to aim at."""
    rows = [RequestRow.objects.create(owner=owner, policy=policy, profile=profile, resources=resources)
            for owner, policy, profile, resources in [
                (bob, "dev", "half", {"gpu": 500, "step_run": 1000}),
                (bob, "dev", "4xgpu", {"gpu": 4000, "step_run": 1000}),
                (alice, "research", "4xgpu", {"gpu": 4000, "step_run": 1000}),
                (alice, "research", "4xgpu", {"gpu": 4000, "step_run": 1000}),
                (carol, "dev", "half", {"gpu": 500, "step_run": 1000}),
            ]]
    reconcile_pass()
    tokens = {"alice": Credential(alice), "bob": Credential(bob)}
    saved = APIClient().put(f"{BASE}/config/draft", document(), format="json",
                            HTTP_AUTHORIZATION=tokens["alice"].header())
    assert saved.status_code == 200, saved.content
    ids = [row.id for row in rows]
    return {"tokens": tokens,
            "known": {"id": ids, "request_id": ids, "pk": ids, "n": [1], "number": [1], "version": [1],
                      "name": ["h100", "a100"]}}


# Bodies near valid ones, where purely schema-driven data rarely reaches the interesting code:
# a known document or submission with one to three parts replaced by odd JSON, or removed.
LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70), st.floats(), st.text(max_size=70),
    st.sampled_from(["0.5", "0.1234", "-1", "1e3", "NaN", "Infinity", "1" * 50, "", "16GiB", "12XB", "*", "H100"]),
)
JSON = st.recursive(LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(st.text(max_size=12), inner, max_size=3)),
                    max_leaves=6)
SUBMISSIONS = [
    {"policy": "dev", "profile": "job", "resources": {"gpu": 2}, "preemptible": True, "max_retries": 0,
     "lease_seconds": 300, "name": "train-42", "labels": {"team": "nlp"}},
    {"policy": "dev", "profile": "job",
     "resource_settings": {"gpu_count": 2, "cpu_count": 4, "memory": "16GiB", "pool_resources": {"trt": 1}}},
    {"policy": "research", "profile": "4xgpu", "preemptible": False},
]


def places(value, at: tuple = ()) -> list[tuple]:
    """Every place in a JSON value, the root excluded, as a path of keys and indexes."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    found = []
    for key, child in children:
        found += [(*at, key), *places(child, (*at, key))]
    return found


def mutated(base: dict):
    def apply(edits: list) -> dict:
        value = copy.deepcopy(base)
        for place, replacement, remove in edits:
            parent = value
            try:
                for key in place[:-1]:
                    parent = parent[key]
                if remove:
                    del parent[place[-1]]
                else:
                    parent[place[-1]] = replacement
            except (KeyError, IndexError, TypeError):  # an earlier edit changed the shape
                continue
        return value

    edit = st.tuples(st.sampled_from(places(base)), JSON, st.booleans())
    return st.lists(edit, max_size=3).map(apply)


AIMED_BODIES = {
    ("POST", "/requests"): st.sampled_from(SUBMISSIONS).flatmap(mutated),
    ("PUT", "/config/draft"): mutated(document()),
    ("POST", "/requests/actions"): st.sampled_from(["heartbeat", "release", "cancel"]).flatmap(
        lambda action: mutated({"action": action, "requests": [{"id": 1, "attempt": 1}, {"id": 2}, {"id": 3}]})),
}


def operations_for(schema, method: str, path: str) -> list:
    """The schemathesis operations a target stands for (``*``: every one beyond api.md)."""
    documented = {(m, template(p)) for m, p in API_MD_OPERATIONS}
    found = []
    for result in schema.get_all_operations():
        operation = result.ok()
        key = (operation.method.upper(), template(operation.path.removeprefix(BASE)))
        if (method == "*" and key not in documented) or key == (method, template(path)):
            found.append(operation)
    return found


def cases(operation, known: dict):
    """Positive and negative cases, and positive ones aimed at objects that exist or at bodies
    near valid ones."""
    params = [p.name for p in operation.path_parameters]
    strategies = [operation.as_strategy(), operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)]
    if params and all(name in known for name in params):
        aimed = st.fixed_dictionaries({name: st.sampled_from(known[name]) for name in params})
        strategies.append(aimed.flatmap(lambda values: operation.as_strategy(path_parameters=values)))
    bodies = AIMED_BODIES.get((operation.method.upper(), template(operation.path.removeprefix(BASE))))
    if bodies is not None:
        strategies.append(bodies.flatmap(lambda body: operation.as_strategy(body=body)))
    return st.one_of(strategies)


def fuzz(operation, known: dict, credential: Credential, examples: int, failures: list[str],
         statuses: Counter) -> None:
    @settings(max_examples=examples, deadline=None, database=None, derandomize=True, print_blob=False,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=cases(operation, known))
    def run(case) -> None:
        try:
            response = case.call(app=application, headers={"Authorization": credential.header()})
        except requests.exceptions.InvalidJSONError:
            reject()  # a body with NaN or infinity: no JSON client can send it, so no server sees it
        statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=[not_a_server_error])
        except Exception:
            failure = (f"{case.method} {case.formatted_path} query={case.query} body={case.body!r} "
                       f"→ {response.status_code}")
            if failure not in failures:
                failures.append(failure)
            raise

    try:
        run()
    except Exception:
        if not failures:  # not a server error: something else broke, show it as it is
            raise


_loaded: list = []


def loaded_schema():
    """The schema as the application serves it, loaded once per test session."""
    if not _loaded:
        _loaded.append(schemathesis.openapi.from_wsgi("/api/schema/?format=json", application))
    return _loaded[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("persona,method,path", list(fuzz_targets()))
def test_the_fuzz_run_finds_no_server_error(world, persona, method, path):
    schema = loaded_schema()
    operations = operations_for(schema, method, path)
    if method == "*" and not operations:
        pytest.skip("the schema has no operation beyond api.md")
    assert operations, f"{method} {path} is not in the schema"
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    for operation in operations:
        fuzz(operation, world["known"], world["tokens"][persona], EXAMPLES[persona], failures, statuses)
    print(f"{persona} {method} {path}: {dict(sorted(statuses.items()))}")
    assert not failures, failures
    assert 401 not in statuses, "every call should carry a valid token"
