"""The console's pages over HTTP (poolweb.console.*_pages): who may see which, what each renders,
and the editor's two fragments refusing what they cannot render. What a person sees and does in
them is tests/browser/."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from poolweb.models import Event, SiteState
from poolweb.services import config as config_services
from tests.poolweb.conftest import document, signed_in

pytestmark = pytest.mark.django_db

PAGES = ["/", "/queues/", "/queues/h100/", "/policies/", "/requests/", "/account/tokens/"]
ADMIN_PAGES = ["/versions/", "/versions/1/", "/versions/0/diff/1/"]


@pytest.mark.parametrize("path", PAGES + ADMIN_PAGES)
def test_anonymous_visitors_are_sent_to_sign_in(provisioned, path):
    response = Client().get(path)
    assert response.status_code == 302 and response["Location"] == f"/accounts/login/?next={path}"


@pytest.mark.parametrize("path", PAGES)
def test_while_management_is_off_every_page_says_who_turned_it_off(provisioned, alice, bob, path):
    config_services.management_set(enabled=False, user=alice)

    html = signed_in(bob).get(path).content.decode()

    assert '<div class="banner" id="management-banner" data-me="bob" aria-live="polite">' in html
    assert "Resource management is off." in html and "Turned off by alice <time" in html
    state = SiteState.objects.get(pk=1)
    assert state.management_changed_by == alice and state.management_changed_at is not None


def test_the_banner_is_hidden_while_management_is_on(provisioned, bob):
    html = signed_in(bob).get("/").content.decode()
    assert '<div class="banner" id="management-banner" data-me="bob" aria-live="polite" hidden>' in html


@pytest.mark.parametrize("path", PAGES)
def test_every_signed_in_user_sees_the_pages_in_the_shell(provisioned, bob, path):
    response = signed_in(bob).get(path)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'role="switch"' in html and 'aria-label="Resource management"' in html and 'aria-disabled="true"' in html
    assert ">Sign out<" in html and ">Versions<" not in html


@pytest.mark.parametrize("path", ADMIN_PAGES)
def test_the_version_pages_are_for_admins(provisioned, alice, bob, path):
    assert signed_in(bob).get(path).status_code == 403
    assert signed_in(alice).get(path).status_code == 200


def test_a_member_gets_no_editor(provisioned, bob):
    html = signed_in(bob).get("/").content.decode()
    assert 'aria-label="Pool h100"' in html and "Open editor" not in html and 'id="pool-dialog"' not in html
    page = json.loads(html.split('id="page-data" type="application/json">')[1].split("</script>")[0])
    assert page == {"admin": False, "live_version": 1, "draft": False, "seq": Event.objects.latest("seq").seq}


def test_the_switch_shows_the_stored_state(provisioned, alice):
    SiteState.objects.filter(pk=1).update(management_enabled=False)
    assert 'aria-checked="false"' in signed_in(alice).get("/").content.decode()


@pytest.mark.parametrize("path", ["/versions/2/", "/versions/1/diff/9/", f"/versions/{10**12}/"])
def test_an_unknown_version_is_a_404_page(provisioned, alice, path):
    response = signed_in(alice).get(path)
    assert response.status_code == 404 and b"There is no configuration version" in response.content


def test_the_compare_form_leads_to_the_diff(provisioned, alice):
    client = signed_in(alice)
    response = client.get("/versions/compare/", {"before": "0", "after": "1"})
    assert response.status_code == 302 and response["Location"] == "/versions/0/diff/1/"
    assert client.get("/versions/compare/", {"before": "x"}).status_code == 400


def board(client: Client, body) -> tuple[int, str]:
    response = client.post("/editor/board/", body if isinstance(body, str) else json.dumps(body),
                           content_type="application/json")
    return response.status_code, response.content.decode()


def test_the_editor_board_renders_the_draft_with_its_errors_at_their_cards(provisioned, alice):
    doc = document()
    doc["profiles"][0]["connections"] = []
    errors = [{"path": "profiles[0].connections", "code": "no_connection", "message": "half has no connection"}]

    status, html = board(signed_in(alice), {"document": doc, "errors": errors, "warnings": []})

    assert status == 200
    half = html.split('aria-label="Profile half"')[1].split("</section>")[0]
    assert 'role="alert"' in half and "half has no connection" in half
    assert 'aria-label="Move a100 up"' not in half and 'aria-label="Edit half"' in half


@pytest.mark.parametrize("body, status", [("{not json", 400), ("[1]", 400), ({"document": 5}, 200),
                                          ({"document": document(), "errors": "x"}, 200)])
def test_the_editor_board_refuses_what_is_not_json_and_reads_the_rest_leniently(provisioned, alice, body, status):
    assert board(signed_in(alice), body)[0] == status


def test_the_editor_fragments_are_for_admins_and_posts(provisioned, alice, bob):
    assert board(signed_in(bob), {"document": document()})[0] == 403
    assert signed_in(alice).get("/editor/board/").status_code == 405
    assert signed_in(alice).post("/editor/preview/").status_code == 404  # no draft saved yet


def test_the_preview_fragment_says_what_the_saved_draft_changes(provisioned, alice):
    doc = document()
    doc["pools"][0]["capacity"] = {"gpu": 16}
    config_services.draft_save(document=doc, user=alice)

    html = signed_in(alice).post("/editor/preview/").content.decode()

    assert "pool h100 changed: capacity.gpu 8 → 16" in html
    assert "No current request would be granted" in html


def test_the_diff_page_shows_each_field(provisioned, alice):
    doc = document()
    doc["pools"][0]["capacity"] = {"gpu": 16}
    config_services.config_provision_document(document=doc, author=alice)

    html = signed_in(alice).get("/versions/1/diff/2/").content.decode()

    assert 'aria-label="Pool h100 changed"' in html
    assert "<code>capacity.gpu</code>" in html and ">8<" in html and ">16<" in html


HOSTILE = [
    "/queues/" + "x" * 5000 + "/", "/queues/%00/", "/queues/h100/why/99999/", "/queues/h100/why/1/",
    "/queues/nothing/why/1/", "/requests/?page=abc", "/requests/?page=-1", "/requests/?page=99999",
    "/requests/?state=bogus", "/requests/?state=" + "pending," * 500, "/requests/?policy=%00",
    "/requests/?owner=nobody", "/requests/99999999999999999999/", "/requests/0/",
    "/policies/nothing/card/", "/policies/" + "p" * 3000 + "/card/", "/versions/?page=zzz",
    "/versions/99999/", "/versions/1/diff/99999/", "/versions/compare/?before=x&after=1",
]


@pytest.mark.parametrize("path", HOSTILE)
@pytest.mark.parametrize("who", ["alice", "bob"])
def test_hostile_paths_and_queries_get_a_page_or_a_4xx_never_a_500_and_write_nothing(provisioned, request, who, path):
    events = Event.objects.count()
    response = signed_in(request.getfixturevalue(who)).get(path)
    assert response.status_code < 500
    assert Event.objects.count() == events


def test_favicon_ico_answers_with_the_logo_for_anyone(db):
    response = Client().get("/favicon.ico")
    assert response.status_code == 302 and response["Location"] == "/static/console/logo.svg"


def test_the_task_queue_says_only_warnings_unless_asked():
    import logging

    assert logging.getLogger("django-q").getEffectiveLevel() == logging.WARNING


def test_pages_show_display_names_where_people_read_them(alice, bob):
    named = document()
    named["pools"][0]["display_name"] = "H100 Half a Superpod"
    named["profiles"][0]["display_name"] = "Half a GPU"
    named["profiles"][0]["connections"] = [{"pool": "a100"}, {"pool": "h100"}]  # listed on h100's page too
    named["policies"][0]["display_name"] = "Product team"
    version = config_services.config_provision_document(document=named, author=alice)
    assert {p.name: p.display_name for p in version.pools.all()}["h100"] == "H100 Half a Superpod"
    from poolweb.models import Request

    request = Request.objects.create(owner=bob, policy="dev", profile="half", resources={"gpu": 500})

    assert "H100 Half a Superpod" in signed_in(bob).get("/queues/").content.decode()
    queue = signed_in(bob).get("/queues/h100/").content.decode()
    assert "Pool H100 Half a Superpod" in queue
    assert f'<tr data-id="{request.pk}"' in queue and '<td data-cell="policy">Product team</td>' in queue
    rows = signed_in(bob).get("/queues/h100/rows/pending/?limit=5").content.decode()
    assert '<td data-cell="profile">Half a GPU</td>' in rows
    assert "policy Product team · profile Half a GPU" in signed_in(bob).get(f"/requests/{request.pk}/").content.decode()
    listed = signed_in(bob).get("/requests/").content.decode()
    assert "<td>Product team</td>" in listed and "<td>Half a GPU</td>" in listed
    assert '"h100": "H100 Half a Superpod"' in listed  # for the scripts that write a request's pool
    configuration = signed_in(bob).get("/").content.decode()
    assert '<h3 class="card-title">H100 Half a Superpod <span class="card-name">h100</span></h3>' in configuration
    assert 'Product team <span class="muted">dev</span>' in configuration  # in the profiles' policy ranks
    policies = signed_in(bob).get("/policies/").content.decode()
    assert '<h2 class="card-title">Product team <span class="card-name">dev</span></h2>' in policies


def test_the_policies_page_and_the_policy_card_show_a_policy_s_time_rules(alice, bob):
    timed = document()
    timed["policies"][0].update(min_runtime_seconds=1800, max_runtime_seconds=86400, require_max_runtime=True)
    config_services.config_provision_document(document=timed, author=alice)

    policies = signed_in(bob).get("/policies/").content.decode()
    assert '<span class="chip fixed time-rule">protected for its first 30 min</span>' in policies
    assert '<span class="chip fixed time-rule">runs at most 1 d</span>' in policies
    assert '<span class="chip fixed time-rule">must state a run limit</span>' in policies
    card = signed_in(bob).get("/policies/dev/card/").content.decode()
    assert "protected for its first 30 min" in card
    configuration = signed_in(bob).get("/").content.decode()
    assert ("<dt>Time rules</dt><dd><ul class=\"rule-list\"><li>protected for its first 30 min</li>"
            "<li>runs at most 1 d</li><li>must state a run limit</li></ul></dd>") in configuration


@pytest.mark.parametrize("path,status", [("/queues/h100/rows/pending/?limit=0", 400),
                                         ("/queues/h100/rows/pending/?limit=lots", 400),
                                         ("/queues/h100/rows/waiting/", 404), ("/queues/nowhere/rows/running/", 404)])
def test_the_rows_of_a_queue_table_refuse_what_they_cannot_render(provisioned, bob, path, status):
    assert signed_in(bob).get(path).status_code == status


def test_the_rows_of_a_queue_table_come_with_the_tables_count(provisioned, bob):
    from poolweb.models import Request

    for _ in range(3):
        Request.objects.create(owner=bob, policy="dev", profile="half", resources={"gpu": 500}, queue_pool="a100")
    rows = signed_in(bob).get("/queues/a100/rows/pending/?limit=2").content.decode()
    assert rows.strip().startswith('<tbody data-count="3">') and rows.count("<tr data-id=") == 2


# The page: session, user, newest seq, site row, version, pending counts, live rows, held rows,
# running rows, pending rows, (a member's) groups. Its rows: session, user, site row, version,
# (groups,) rows, count.
@pytest.mark.parametrize("path,statements", [("/queues/a100/", 11), ("/queues/a100/rows/pending/?limit=50", 7),
                                             ("/queues/a100/rows/running/?limit=50", 7)])
def test_a_queue_page_and_its_rows_read_the_site_row_once_whatever_they_show(provisioned, alice, bob, path,
                                                                            statements):
    # Every open queue page re-reads its rows as the stream tells it of changes: each statement
    # counts 50 times over. The selectors share one read of the live configuration.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from poolweb.models import Request

    Request.objects.bulk_create([Request(owner=bob, policy="dev", profile="half", resources={"gpu": 500},
                                         queue_pool="a100", position=n + 1) for n in range(60)])
    Request.objects.bulk_create([Request(owner=bob, policy="dev", profile="half", resources={"gpu": 500},
                                         state="allocated", pool="a100") for _ in range(8)])
    for who in (alice, bob):  # an admin, and a member whose teams the live configuration names
        client = signed_in(who)
        assert client.get(path).status_code == 200
        with CaptureQueriesContext(connection) as read:
            assert client.get(path).status_code == 200
        made = [query["sql"] for query in read.captured_queries]
        assert sum('"poolweb_sitestate"' in sql for sql in made) == 1, made
        assert sum('"poolweb_configversion"' in sql for sql in made) == 1, made
        assert len(made) <= statements, made


def test_a_pools_card_shows_its_labels_and_the_editor_offers_them(alice):
    labelled = document()
    labelled["pools"][0]["labels"] = {"slurm_partition": "gpu-h100", "rack": "b7"}
    config_services.config_provision_document(document=labelled, author=alice)

    page = signed_in(alice).get("/").content.decode()

    card = page[page.index('aria-label="Pool h100"'):page.index('aria-label="Pool a100"')]
    assert 'aria-label="Labels of h100"' in card
    assert "<dt>rack</dt><dd>b7</dd>" in card and "<dt>slurm_partition</dt><dd>gpu-h100</dd>" in card
    assert 'aria-label="Labels of a100"' not in page  # a pool without labels shows none
    assert "data-add-label" in page and '<option value="slurm_partition">' in page  # the pool dialog's rows
