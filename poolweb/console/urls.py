"""The console's pages (docs/console.md: the paths are a contract)."""

from django.urls import path

from poolweb.console import policy_pages, queue_views, request_pages, token_pages, views

app_name = "console"

urlpatterns = [
    path("", views.configuration, name="configuration"),
    path("editor/board/", views.editor_board, name="editor-board"),
    path("editor/preview/", views.editor_preview, name="editor-preview"),
    path("versions/", views.versions, name="versions"),
    path("versions/compare/", views.version_compare, name="version-compare"),
    path("versions/<int:number>/", views.version, name="version"),
    path("versions/<int:a>/diff/<int:b>/", views.version_diff, name="version-diff"),
    path("queues/", queue_views.queues, name="queues"),
    path("queues/<str:pool>/", queue_views.queue, name="queue"),
    path("queues/<str:pool>/why/<int:request_id>/", queue_views.queue_why, name="queue-why"),
    path("queues/<str:pool>/rows/<str:table>/", queue_views.queue_rows, name="queue-rows"),
    path("policies/", policy_pages.policies_page, name="policies"),
    path("policies/<str:name>/card/", policy_pages.policy_card, name="policy"),
    path("requests/", request_pages.request_list_page, name="requests"),
    path("requests/<int:request_id>/", request_pages.request_page, name="request"),
    path("account/tokens/", token_pages.tokens_page, name="tokens"),
]
