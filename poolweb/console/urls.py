"""The console's pages (spec/console.md: the paths are a contract)."""

from django.urls import path

from poolweb.console import queue_views, views

app_name = "console"

urlpatterns = [
    path("", views.configuration, name="configuration"),
    path("editor/board/", views.editor_board, name="editor-board"),
    path("editor/preview/", views.editor_preview, name="editor-preview"),
    path("versions/", views.versions, name="versions"),
    path("versions/compare/", views.version_compare, name="version-compare"),
    path("versions/<int:number>/", views.version, name="version"),
    path("versions/<int:a>/diff/<int:b>/", views.version_diff, name="version-diff"),
    # Part 2 of the console (issue 11) fills these in.
    path("queues/", queue_views.queues, name="queues"),
    path("queues/<str:pool>/", queue_views.queue, name="queue"),
    path("queues/<str:pool>/why/<int:request_id>/", queue_views.queue_why, name="queue-why"),
    path("policies/", views.coming, {"page": "policies"}, name="policies"),
    path("requests/", views.coming, {"page": "requests"}, name="requests"),
    path("account/tokens/", views.coming, {"page": "tokens"}, name="tokens"),
]
