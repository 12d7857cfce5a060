"""HTTP and websockets in one ASGI application (daphne serves it)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "poolweb.settings")

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

# The admin's and the API docs' static files come from the same process: `make run` needs no
# separate web server in front.
django_application = ASGIStaticFilesHandler(get_asgi_application())

# These use the models, so they come once get_asgi_application has set Django up.
from channels.auth import AuthMiddlewareStack  # noqa: E402

from poolweb.realtime.routing import websocket_urlpatterns  # noqa: E402

# The event stream (api.md §3). AuthMiddlewareStack reads the console's session from the
# cookie; a connection without one signs in with a token message instead (poolweb.realtime).
application = ProtocolTypeRouter({
    "http": django_application,
    "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
})
