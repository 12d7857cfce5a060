"""poolctl's version, and the name it gives itself to the server (HTTP's and the stream's
``User-Agent``): a module of its own, below every other, so none imports the package's front."""

__version__ = "0.1.0"
USER_AGENT = f"poolctl/{__version__}"
