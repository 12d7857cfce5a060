"""HTTP and websockets in one ASGI application (daphne serves it)."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "poolweb.settings")

from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

django_application = get_asgi_application()

application = ProtocolTypeRouter({"http": django_application})
