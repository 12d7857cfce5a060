"""The browser console (docs/console.md): server-rendered pages whose JavaScript (static/console/)
writes through the REST API and follows the event stream like any other client."""
