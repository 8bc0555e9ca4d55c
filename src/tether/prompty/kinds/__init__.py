"""The built-in tool kinds (§11.2): ``prompty`` (a child ``.prompty`` as a tool), ``mcp`` and
``openapi``, on the checks in ``common``; ``builtin`` installs them. They sit above the
operations (a ``prompty`` tool runs a turn), so the registry finds them by module name."""
