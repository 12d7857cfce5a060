"""The console's pages (docs/console.md: the paths are a contract). One convention: a page's
view module ``<page>_pages.py``, its template ``templates/console/<page>.html`` and its script
``static/console/<page>.js``; what several pages share has a name of its own concern."""

from django.urls import path

from poolweb.console import (
    audit_pages, configuration_pages, policy_pages, queue_pages, request_pages, token_pages, usage_pages,
    version_pages,
)

app_name = "console"

urlpatterns = [
    path("", configuration_pages.configuration, name="configuration"),
    path("editor/board/", configuration_pages.editor_board, name="editor-board"),
    path("editor/preview/", configuration_pages.editor_preview, name="editor-preview"),
    path("versions/", version_pages.versions, name="versions"),
    path("versions/compare/", version_pages.version_compare, name="version-compare"),
    path("versions/<int:number>/", version_pages.version, name="version"),
    path("versions/<int:a>/diff/<int:b>/", version_pages.version_diff, name="version-diff"),
    path("queues/", queue_pages.queues, name="queues"),
    path("queues/<str:pool>/", queue_pages.queue, name="queue"),
    path("queues/<str:pool>/why/<int:request_id>/", queue_pages.queue_why, name="queue-why"),
    path("queues/<str:pool>/rows/<str:table>/", queue_pages.queue_rows, name="queue-rows"),
    path("policies/", policy_pages.policies_page, name="policies"),
    path("policies/<str:name>/card/", policy_pages.policy_card, name="policy"),
    path("usage/", usage_pages.usage_page, name="usage"),
    path("requests/", request_pages.request_list_page, name="requests"),
    path("requests/<int:request_id>/", request_pages.request_page, name="request"),
    path("requests/<int:request_id>/history/", request_pages.request_history_rows, name="request-history"),
    path("account/tokens/", token_pages.tokens_page, name="tokens"),
    path("audit/", audit_pages.audit_page, name="audit"),
]
