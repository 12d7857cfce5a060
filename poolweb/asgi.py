"""HTTP and websockets in one ASGI application (daphne serves it)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "poolweb.settings")

from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

# The admin's and the API docs' static files come from the same process: `make run` needs no
# separate web server in front.
django_application = ASGIStaticFilesHandler(get_asgi_application())

application = ProtocolTypeRouter({"http": django_application})
