"""A served agent over A2A 1.0, on the ``a2a-sdk`` server (the ``a2a`` extra).

``card``: the agent card; ``records``: tasks kept in the session store; ``decisions``: a
follow-up's approvals; ``progress``: a run's events as task events; ``executor``: tether runs as
the SDK's ``AgentExecutor``; ``handler``: the checks before a message runs; ``app``: the routes.
``tether.serve.a2a_app`` and ``tether.serve.app(..., a2a=True)`` serve them.
"""

RECORDS = ("a2a-task:", "a2a-message:")
"""The prefixes of the sessions that keep A2A tasks and message ids (``records``): records, not
conversations, so the chat page does not list them."""
