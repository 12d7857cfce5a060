"""What the shell of every console page needs (templates/console/base.html): the navigation, the
management switch's state (with who turned it off and when, for the banner while it is off) and
what people read of the live pools, profiles and policies (``names``, decision 121), each read only
when a page shows it."""

from __future__ import annotations

from functools import cached_property

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from poolweb.console.request_pages import ACTIONS
from poolweb.selectors.directory import console_managed_by
from poolweb.selectors.versions import LiveSite, Management, display_names, management_of, management_state
from reconcile.eta import BASIS_TEXT, confidence

# (link name, path, admins only): docs/console.md names the links.
NAVIGATION = (
    ("Configuration", "/", False),
    ("Queues", "/queues/", False),
    ("Policies", "/policies/", False),
    ("Usage", "/usage/", False),
    ("Requests", "/requests/", False),
    ("Versions", "/versions/", True),
    ("Audit", "/audit/", True),
    ("Tokens", "/account/tokens/", False),
)


class Shell:
    def __init__(self, request: HttpRequest, live: LiveSite | None = None) -> None:
        self.request = request
        self.live = live  # the site row as the page's view read it already, if it did

    @cached_property
    def navigation(self) -> list[dict]:
        user, here = self.request.user, self.request.path
        return [{"name": name, "href": href, "current": here == href if href == "/" else here.startswith(href)}
                for name, href, admins in NAVIGATION if user.is_staff or not admins]

    @cached_property
    def managed_by(self) -> str:
        """How the directory manages the signed-in user ("LDAP", "OpenID Connect"), or "" (and
        no query) when no directory is configured."""
        return console_managed_by(self.request.user)

    @property
    def request_states(self) -> dict[str, tuple[str, ...]]:
        """The states that offer Cancel and Release, for the pages' scripts (static/console/states.js)."""
        return ACTIONS

    @property
    def eta_words(self) -> dict[str, dict[str, str]]:
        """R-54: each basis as people read it and its confidence, for static/console/shared/starts.js."""
        return {"basis": BASIS_TEXT, "confidence": {basis: confidence(basis) for basis in BASIS_TEXT}}

    @cached_property
    def management(self) -> Management:
        return management_of(self.live.row) if self.live else management_state()

    @property
    def pool_names(self) -> dict[str, str]:
        """Pool name → what people read, for the scripts that write a request's pool
        (static/console/shared/request_view.js): rendered by the requests pages only, so the
        other pages read no configuration for it."""
        return display_names().pools


def shell(request: HttpRequest) -> dict:
    return {"shell": Shell(request), "names": SimpleLazyObject(display_names)}


def shell_of(request: HttpRequest, live: LiveSite) -> dict:
    """``shell``'s context from the site row and configuration the view read already
    (``live_site``): a view's context wins over the processor's, so the page reads them once."""
    return {"shell": Shell(request, live), "names": display_names(live.config)}
