"""Running an agent on tether's engine (§7-§10, §13): ``wire`` maps the agent's model to a
tether transport, ``tools`` binds its tools (``tool_schemas`` and ``tool_sessions`` for tools
of other kinds), ``loop`` configures the engine as the spec's agent loop and translates its
events (``events``) and errors, ``streaming`` is the stream a caller reads."""
