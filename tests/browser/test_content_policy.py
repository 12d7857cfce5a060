"""The Content-Security-Policy as Chromium applies it (poolweb/content_policy.py): the console's
pages, the admin and the API docs carry it and run under it, and nothing on them is refused (the
``visit`` fixture fails a test on any refusal, on every page of every browser test)."""

from __future__ import annotations

from playwright.sync_api import expect

PAGES = ["/", "/queues/", "/queues/h100/", "/policies/", "/requests/", "/versions/", "/versions/1/",
         "/versions/0/diff/1/", "/account/tokens/", "/admin/", "/admin/auth/user/add/"]


def test_every_page_carries_the_policy_and_runs_under_it(visit, demo):
    page = visit(demo.author)

    for path in PAGES:
        policy = page.goto(path).headers["content-security-policy"]
        assert "script-src 'self';" in policy, path

    policy = page.goto("/api/docs/").headers["content-security-policy"]
    assert "script-src 'self';" in policy
    expect(page.locator(".opblock").first).to_be_visible()  # Swagger UI's scripts ran and read the schema
