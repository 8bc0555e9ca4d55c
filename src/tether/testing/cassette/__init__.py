"""Cassettes: a run's real HTTP exchanges (model providers, MCP servers over HTTP) recorded once to
a readable file, credentials blanked, and replayed exactly with no network; see ``Cassette``."""

from .cassette import Cassette

__all__ = ["Cassette"]
