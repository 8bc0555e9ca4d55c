"""Rendering and parsing (§5, §6): ``templates`` renders a template with its inputs (``jinja``
in a ``sandbox``, or ``mustache``, on the budgets in ``base``) and ``parse`` turns the text into
messages, trusting only role markers this render signed (``markers``)."""
