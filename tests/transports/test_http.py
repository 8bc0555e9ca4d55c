"""``HttpTransport`` against a real local server that misbehaves: error mapping, retries through the
agent, broken streams, timeouts, pool hygiene, closing, credentials and redirects."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import gzip
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, ClassVar

import httpx
import pytest
from misbehaving_server import (
    MisbehavingServer,
    Reply,
    context_too_long,
    dropped_stream,
    echo_authorization,
    echo_headers,
    error_reply,
    json_reply,
    overloaded,
    rate_limited,
    raw_reply,
    redirect,
    server_error,
    slow_first_byte,
    slow_headers,
    sse_stream,
    unauthorized,
)

from tether import Agent, transports
from tether.context import MemoryContextStore
from tether.errors import (
    AuthenticationError,
    BadRequestError,
    ConnectionFailedError,
    ContextWindowExceededError,
    OverloadedError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    TransportError,
)
from tether.events import Error, IterationEnd, Retrying, SessionEndEvent, StreamEvent, TextDelta
from tether.messages import Message
from tether.transports.codecs.protocol import WireCodec
from tether.transports.http import HttpTransport
from tether.transports.options import ModelOptions
from tether.transports.retry import RetryPolicy
from tether.transports.sse import SSEEvent
from tether.transports.status import error_from_response
from tether.types import StopReason, ToolSpec, Usage

KEY = "sk-test-SECRET-0123456789abcdef"
FAST_RETRY = RetryPolicy(initial_delay=0.01, max_retry_after=0.05)


# --- a minimal wire format for the base-level tests ---------------------------------------------


class EchoDecoder:
    """``data: {"t": ...}`` is text, ``data: {"end": true}`` ends the turn."""

    def __init__(self) -> None:
        self.ended = False

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        data = json.loads(event.data)  # malformed JSON raises here; the base must say so clearly
        if "t" in data:
            return [TextDelta(0, data["t"])]
        if data.get("end"):
            self.ended = True
            return [IterationEnd(0, StopReason.END_TURN, Usage(3, 2))]
        return []

    def finish(self) -> list[StreamEvent]:
        if not self.ended:
            raise StreamInterruptedError("the stream ended before its end event")
        return []


class EchoCodec:
    path = "/echo"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def encode(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        system: str,
        options: ModelOptions,
        stream: bool,
    ) -> dict[str, Any]:
        return {
            "model": model,
            "system": system,
            "messages": [{"role": m.role, "content": m.text} for m in messages],
            "stream": stream,
        }

    def decoder(self) -> EchoDecoder:
        return EchoDecoder()

    def parse(self, body: Any) -> list[StreamEvent]:
        return [TextDelta(0, body["text"]), IterationEnd(0, StopReason.END_TURN, Usage(3, 2))]


class EchoTransport(HttpTransport):
    provider: ClassVar[str] = "echo"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    env_key: ClassVar[str | None] = "OPENAI_API_KEY"

    def _make_codec(self) -> WireCodec:
        return EchoCodec()


def text_events(*pieces: str) -> list[dict[str, Any]]:
    return [*({"t": p} for p in pieces), {"end": True}]


HELLO = text_events("Hel", "lo")
HI = [{"t": "hi"}]
USER = [Message("user", "hi")]


@pytest.fixture
async def server() -> AsyncIterator[MisbehavingServer]:
    async with MisbehavingServer() as s:
        yield s


@pytest.fixture
async def make() -> AsyncIterator[Callable[..., EchoTransport]]:
    """Build transports (closed at the end of the test)."""
    made: list[EchoTransport] = []

    def build(base_url: str | None, **kwargs: Any) -> EchoTransport:
        kwargs.setdefault("timeout", 5.0)
        t = EchoTransport("echo-1", base_url=base_url, **kwargs)
        made.append(t)
        return t

    yield build
    for t in made:
        await t.aclose()


async def collect(transport: HttpTransport, messages: Sequence[Message] = USER) -> list[Any]:
    return [e async for e in transport.stream(messages, [], "be brief")]


async def failure(transport: HttpTransport) -> TransportError:
    with pytest.raises(TransportError) as info:
        await collect(transport)
    return info.value


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


def assert_history_valid(messages: Sequence[Message]) -> None:
    """Roles alternate sensibly and every tool call is answered in the next message."""
    assert messages and messages[0].role == "user"
    for i, m in enumerate(messages):
        if m.tool_uses:
            assert i + 1 < len(messages)
            ids = [u.id for u in m.tool_uses]
            assert [r.tool_use_id for r in messages[i + 1].tool_results] == ids
        if m.tool_results:
            previous = {u.id for u in messages[i - 1].tool_uses}
            assert {r.tool_use_id for r in m.tool_results} <= previous


# --- the happy path and what goes over the wire -------------------------------------------------


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_stream_events_and_request(
    server: MisbehavingServer, make: Callable[..., EchoTransport], framing: Any
) -> None:
    server.script(sse_stream(HELLO, framing=framing))
    t = make(server.url + "/v1/", headers={"X-Custom": "yes"})
    events = await collect(t)
    assert events == [
        TextDelta(0, "Hel"),
        TextDelta(0, "lo"),
        IterationEnd(0, StopReason.END_TURN, Usage(3, 2)),
    ]
    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/echo"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-custom"] == "yes"
    assert "authorization" not in request.headers
    assert request.json() == {
        "model": "echo-1",
        "system": "be brief",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
    }


async def test_events_split_across_writes_and_crlf(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    body = b'data: {"t": "a\xe2\x80\xa8b"}\r\n\r\n: ping\r\ndata: {"end": true}\r\n\r\n'
    pieces = [body[i : i + 3] for i in range(0, len(body), 3)]
    server.script(sse_stream(pieces))
    events = await collect(make(server.url))
    assert events[0] == TextDelta(0, "a\u2028b")
    assert isinstance(events[-1], IterationEnd)


async def test_final_event_without_blank_line_on_connection_close(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream(['data: {"t": "x"}\n\n', 'data: {"end": true}'], framing="close"))
    events = await collect(make(server.url))
    assert [type(e) for e in events] == [TextDelta, IterationEnd]


async def test_keep_alive_reuses_one_connection(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream(HELLO))
    t = make(server.url)
    for _ in range(5):
        assert len(await collect(t)) == 3
    assert len(server.requests) == 5
    assert server.connections == 1


async def test_gzip_encoded_stream_is_decoded(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    body = gzip.compress(b'data: {"t": "zip"}\n\ndata: {"end": true}\n\n')
    server.script(sse_stream([body], headers=[("Content-Encoding", "gzip")]))
    events = await collect(make(server.url))
    assert events[0] == TextDelta(0, "zip")


async def test_corrupt_gzip_is_a_transport_error(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream([b"this is not gzip"], headers=[("Content-Encoding", "gzip")]))
    exc = await failure(make(server.url))
    assert isinstance(exc, TransportError)


# --- error mapping ------------------------------------------------------------------------------


def _ms_and_seconds() -> Reply:
    return rate_limited(retry_after="7", retry_after_ms="1500")


ERROR_CASES: list[
    tuple[str, Callable[[], Reply], type[TransportError], bool, float | None, str]
] = [
    ("429-seconds", lambda: rate_limited("2"), RateLimitError, True, 2.0, "Rate limit reached"),
    ("429-ms-wins", _ms_and_seconds, RateLimitError, True, 1.5, "Rate limit reached"),
    (
        "429-ms-only",
        lambda: rate_limited(None, retry_after_ms="250"),
        RateLimitError,
        True,
        0.25,
        "Rate limit",
    ),
    ("429-none", lambda: rate_limited(None), RateLimitError, True, None, "Rate limit"),
    ("429-garbage", lambda: rate_limited("soon"), RateLimitError, True, None, "Rate limit"),
    ("429-negative", lambda: rate_limited("-3"), RateLimitError, True, 0.0, "Rate limit"),
    ("429-nan", lambda: rate_limited("nan"), RateLimitError, True, None, "Rate limit"),
    ("429-past-date", lambda: rate_limited(http_date(-60)), RateLimitError, True, 0.0, "Rate"),
    ("500", lambda: server_error(500), ServerError, True, None, "The server had an error"),
    (
        "502-html",
        lambda: error_reply(502, "<html>Bad gateway</html>"),
        ServerError,
        True,
        None,
        "<html>Bad gateway</html>",
    ),
    ("503-overloaded", overloaded, OverloadedError, True, None, "Overloaded"),
    (
        "503-plain",
        lambda: server_error(503, "Service Unavailable"),
        ServerError,
        True,
        None,
        "Service Unavailable",
    ),
    (
        "529",
        lambda: error_reply(529, {"error": {"type": "overloaded_error", "message": "busy"}}),
        OverloadedError,
        True,
        None,
        "busy",
    ),
    ("408", lambda: error_reply(408, "timeout"), ServerError, True, None, "timeout"),
    ("401", unauthorized, AuthenticationError, False, None, "Incorrect API key provided."),
    (
        "403",
        lambda: error_reply(403, {"error": "forbidden here"}),
        AuthenticationError,
        False,
        None,
        "forbidden here",
    ),
    (
        "400-context",
        context_too_long,
        ContextWindowExceededError,
        False,
        None,
        "maximum context length is 8192 tokens",
    ),
    (
        "400",
        lambda: error_reply(400, {"error": {"message": "Unknown parameter: 'foo'."}}),
        BadRequestError,
        False,
        None,
        "Unknown parameter: 'foo'.",
    ),
    (
        "404",
        lambda: error_reply(404, {"detail": "Not Found"}),
        BadRequestError,
        False,
        None,
        "Not Found",
    ),
    ("422-empty", lambda: error_reply(422), BadRequestError, False, None, "(empty body)"),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize(
    ("reply", "kind", "retryable", "retry_after", "message"),
    [c[1:] for c in ERROR_CASES],
    ids=[c[0] for c in ERROR_CASES],
)
async def test_error_mapping(
    request: pytest.FixtureRequest,
    server: MisbehavingServer,
    make: Callable[..., EchoTransport],
    stream: bool,
    reply: Callable[[], Reply],
    kind: type[TransportError],
    retryable: bool,
    retry_after: float | None,
    message: str,
) -> None:
    server.script(reply())
    exc = await failure(make(server.url, stream=stream))
    assert type(exc) is kind, repr(exc)
    assert exc.retryable is retryable
    if retry_after is None:
        assert exc.retry_after is None
    else:
        assert exc.retry_after == pytest.approx(retry_after)
    assert message in str(exc)
    status = int(request.node.callspec.id.split("-")[0])
    assert exc.status_code == status
    assert str(exc).startswith(f"HTTP {status}: ")
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
async def test_retry_after_http_date(
    server: MisbehavingServer, make: Callable[..., EchoTransport], stream: bool
) -> None:
    server.script(rate_limited(http_date(30)))
    exc = await failure(make(server.url, stream=stream))
    assert isinstance(exc, RateLimitError)
    assert exc.status_code == 429
    assert exc.retry_after is not None
    assert 27.0 <= exc.retry_after <= 31.0


def test_retry_after_http_date_without_zone_is_utc() -> None:
    value = email.utils.formatdate(time.time() + 30, usegmt=True).replace("GMT", "-0000")
    exc = error_from_response(429, httpx.Headers({"Retry-After": value}), b"")
    assert exc.retry_after is not None
    assert 27.0 <= exc.retry_after <= 31.0


def test_status_codes_are_kept() -> None:
    for status in (400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 529):
        exc = error_from_response(status, httpx.Headers(), b'{"error": {"message": "m"}}')
        assert exc.status_code == status
        assert str(exc) == f"HTTP {status}: m"


# --- the agent's retries before the first event -------------------------------------------------


async def run_agent(transport: HttpTransport, **kwargs: Any) -> tuple[list[Any], Any]:
    agent = Agent(system="be brief", transport=transport, retry=kwargs.pop("retry", FAST_RETRY))
    store = MemoryContextStore()
    events = [e async for e in agent.run_stream("hi", store)]
    return events, store


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("first", "advised"),
    [
        (lambda: rate_limited("2"), True),
        (lambda: server_error(500), False),
        (overloaded, False),
        (lambda: rate_limited(http_date(30)), True),
        (lambda: rate_limited(None, retry_after_ms="5000"), True),
    ],
    ids=["429", "500", "503-overloaded", "429-date", "429-ms"],
)
async def test_agent_survives_a_failure_before_the_first_event(
    server: MisbehavingServer,
    make: Callable[..., EchoTransport],
    first: Callable[[], Reply],
    advised: bool,
) -> None:
    server.script(first(), sse_stream(HELLO))
    events, store = await run_agent(make(server.url))
    retries = [e for e in events if isinstance(e, Retrying)]
    assert len(retries) == 1
    assert retries[0].attempt == 1
    if advised:  # the server asked for seconds; the policy caps the wait at max_retry_after
        assert retries[0].delay == pytest.approx(FAST_RETRY.max_retry_after)
    else:  # no advice: the policy's first backoff, jittered down by at most `jitter`
        low = FAST_RETRY.initial_delay * (1 - FAST_RETRY.jitter)
        assert low <= retries[0].delay <= FAST_RETRY.initial_delay
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    end = events[-1]
    assert isinstance(end, SessionEndEvent) and end.error is None
    assert [m.text for m in store.messages] == ["hi", "Hello"]


async def test_agent_honours_retry_after_capped(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(rate_limited("2"), sse_stream(HELLO))
    events, _ = await run_agent(make(server.url))
    [retry] = [e for e in events if isinstance(e, Retrying)]
    assert retry.delay == pytest.approx(0.05)  # max(backoff ~0.01, min(2, max_retry_after))
    assert "RateLimitError" in retry.reason


async def test_agent_survives_429_then_500(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(rate_limited("2"), server_error(500), sse_stream(HELLO))
    events, store = await run_agent(make(server.url))
    assert [e.attempt for e in events if isinstance(e, Retrying)] == [1, 2]
    assert len(server.requests) == 3
    assert store.messages[-1].text == "Hello"


async def test_agent_gives_up_after_max_attempts(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(server_error(500))
    events, store = await run_agent(make(server.url))
    assert len([e for e in events if isinstance(e, Retrying)]) == 2
    assert len(server.requests) == 3
    [error] = [e for e in events if isinstance(e, Error)]
    assert isinstance(error.exception, ServerError)
    assert [m.text for m in store.messages] == ["hi"]


@pytest.mark.parametrize(
    "reply",
    [unauthorized, context_too_long, lambda: error_reply(400, "nope")],
    ids=["401", "400-context", "400"],
)
async def test_agent_does_not_retry_permanent_errors(
    server: MisbehavingServer, make: Callable[..., EchoTransport], reply: Callable[[], Reply]
) -> None:
    server.script(reply(), sse_stream(HELLO))
    events, _ = await run_agent(make(server.url))
    assert not [e for e in events if isinstance(e, Retrying)]
    assert len(server.requests) == 1
    end = events[-1]
    assert isinstance(end, SessionEndEvent)
    assert isinstance(end.error, TransportError) and not end.error.retryable


# --- broken streams -----------------------------------------------------------------------------


async def test_connection_dropped_mid_stream(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(dropped_stream([{"t": "Hel"}, {"t": "lo"}]), sse_stream(HELLO))
    t = make(server.url)
    got: list[Any] = []
    with pytest.raises(StreamInterruptedError) as info:
        async for event in t.stream(USER, [], ""):
            got.append(event)
    assert got == [TextDelta(0, "Hel"), TextDelta(0, "lo")]
    assert not info.value.retryable


async def test_agent_keeps_partial_text_when_the_stream_drops_and_does_not_retry(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(dropped_stream([{"t": "Hel"}, {"t": "lo"}]), sse_stream(HELLO))
    events, store = await run_agent(make(server.url))
    assert not [e for e in events if isinstance(e, Retrying)]
    assert len(server.requests) == 1
    [error] = [e for e in events if isinstance(e, Error)]
    assert isinstance(error.exception, StreamInterruptedError)
    end = events[-1]
    assert isinstance(end, SessionEndEvent)
    assert end.stop_reason is StopReason.ERROR and end.error is error.exception
    assert [(m.role, m.text) for m in store.messages] == [("user", "hi"), ("assistant", "Hello")]
    assert_history_valid(store.messages)


async def test_connection_close_framing_cut_short_is_an_error(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    # With no length and no chunking, a cut looks like a clean end: the codec must notice.
    server.script(sse_stream(HI, framing="close"))
    exc = await failure(make(server.url))
    assert isinstance(exc, StreamInterruptedError)


async def test_drop_before_any_event_is_retryable(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(dropped_stream([": just a comment\n\n"]), sse_stream(HELLO))
    exc = await failure(make(server.url))
    assert isinstance(exc, ConnectionFailedError) and exc.retryable
    server.script(dropped_stream([": just a comment\n\n"]), sse_stream(HELLO))
    events, store = await run_agent(make(server.url))
    assert len([e for e in events if isinstance(e, Retrying)]) == 1
    assert store.messages[-1].text == "Hello"


async def test_hang_up_without_a_response_is_retryable(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(raw_reply(b""), sse_stream(HELLO))
    exc = await failure(make(server.url))
    assert isinstance(exc, ConnectionFailedError) and exc.retryable


async def test_garbage_status_line_is_a_transport_error(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(raw_reply(b"NOT HTTP AT ALL\r\n\r\n"))
    exc = await failure(make(server.url))
    assert isinstance(exc, ConnectionFailedError)


@pytest.mark.parametrize(
    "events",
    [['data: {"t": "Hel\n\n'], [{"t": "ok"}, 'data: {"t": "Hel\n\n', {"end": True}]],
    ids=["first-event", "after-text"],
)
async def test_truncated_json_is_a_clear_error(
    server: MisbehavingServer, make: Callable[..., EchoTransport], events: list[Any]
) -> None:
    server.script(sse_stream(events))
    exc = await failure(make(server.url))
    assert isinstance(exc, StreamInterruptedError)
    assert not exc.retryable
    assert "malformed" in str(exc)
    assert '{"t": "Hel' in str(exc)  # the offending data, so the problem can be seen


async def test_agent_ends_with_clear_error_on_truncated_json(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream([{"t": "par"}, 'data: {"t": "tial\n\n']))
    events, store = await run_agent(make(server.url))
    [error] = [e for e in events if isinstance(e, Error)]
    assert isinstance(error.exception, StreamInterruptedError)
    assert len(server.requests) == 1
    assert store.messages[-1].text == "par"
    assert_history_valid(store.messages)


# --- timeouts -----------------------------------------------------------------------------------


@pytest.mark.timeout(10)
async def test_slow_headers_time_out_as_retryable_connection_failure(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(slow_headers(30.0, sse_stream(HELLO)))
    exc = await failure(make(server.url, timeout=0.2))
    assert isinstance(exc, ConnectionFailedError)
    assert exc.retryable
    assert str(exc).startswith("timed out: ReadTimeout")  # httpx's read timeout, not the deadline
    assert isinstance(exc.__cause__, httpx.ReadTimeout)


async def test_agent_retries_after_slow_headers(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(slow_headers(2.0, sse_stream(HELLO)), sse_stream(HELLO))
    events, store = await run_agent(make(server.url, timeout=0.2))
    assert len([e for e in events if isinstance(e, Retrying)]) == 1
    assert store.messages[-1].text == "Hello"
    assert len(server.requests) == 2


async def test_slow_headers_in_plain_mode(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(slow_headers(2.0))
    exc = await failure(make(server.url, timeout=0.2, stream=False))
    assert isinstance(exc, ConnectionFailedError) and exc.retryable


async def test_slow_first_byte_after_headers_times_out_before_any_event(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(slow_first_byte(2.0, HELLO))
    exc = await failure(make(server.url, timeout=0.2))
    assert isinstance(exc, ConnectionFailedError) and exc.retryable


async def test_slow_first_byte_within_the_timeout_is_fine(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(slow_first_byte(0.1, HELLO))
    events = await collect(make(server.url, timeout=1.0))
    assert len(events) == 3


async def test_stall_after_the_first_event_is_an_interruption(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream(HI, hold=True))
    exc = await failure(make(server.url, timeout=1.0))  # room for the first event under load
    assert isinstance(exc, StreamInterruptedError) and not exc.retryable
    assert "timed out" in str(exc)


async def test_connection_refused_is_retryable(make: Callable[..., EchoTransport]) -> None:
    for stream in (True, False):
        exc = await failure(make(f"http://127.0.0.1:{free_port()}", stream=stream))
        assert isinstance(exc, ConnectionFailedError) and exc.retryable


# --- pool hygiene and closing -------------------------------------------------------------------


async def test_breaking_out_of_500_streams_leaks_no_connection(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    # Each stream stays open after its first event; a leaked response would keep its connection
    # checked out, and request 101 would wait for the pool (timeout 3 s) and fail.
    server.script(sse_stream(HI, hold=True))
    t = make(server.url, timeout=3.0)
    for i in range(500):
        async for event in t.stream(USER, [], ""):
            assert event == TextDelta(0, "hi"), i
            break
    assert len(server.requests) == 500


@pytest.mark.timeout(20)
async def test_agent_runs_end_streams_held_open_after_their_end_event(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    # The end event arrives but the stream is held open: the transport's stream ends at the end
    # event all the same (a read timeout of 60 s would fail the test's own timeout).
    server.script(sse_stream(HELLO, hold=True))
    t = make(server.url, timeout=60.0)
    agent = Agent(system="", transport=t, retry=FAST_RETRY)
    for _ in range(4):
        assert await agent.run("hi") == "Hello"
    assert len(server.requests) == 4
    assert server.connections == 4  # each held connection is given up, not reused


@pytest.mark.timeout(20)
async def test_a_stream_held_open_after_its_end_event_still_ends(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream(HELLO, hold=True))
    assert len(await collect(make(server.url, timeout=60.0))) == 3


async def test_a_connection_dropped_after_the_end_event_is_harmless(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(dropped_stream(HELLO))
    events = await collect(make(server.url))
    assert [type(e) for e in events] == [TextDelta, TextDelta, IterationEnd]


async def test_agent_runs_reuse_one_connection(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream(HELLO))
    agent = Agent(system="", transport=make(server.url), retry=FAST_RETRY)
    for _ in range(5):
        assert await agent.run("hi") == "Hello"
    assert len(server.requests) == 5
    assert server.connections == 1  # the rest of each body was read after its end event


async def test_aclose_closes_the_client(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream(HELLO))
    t = make(server.url)
    await collect(t)
    await t.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await collect(t)
    assert len(server.requests) == 1


async def test_async_with_closes_the_client(server: MisbehavingServer) -> None:
    server.script(sse_stream(HELLO))
    async with EchoTransport("echo-1", base_url=server.url) as t:
        assert len(await collect(t)) == 3
    with pytest.raises(RuntimeError, match="closed"):
        await collect(t)


async def test_a_given_client_is_left_open(server: MisbehavingServer) -> None:
    server.script(sse_stream(HELLO))
    async with httpx.AsyncClient() as client:
        async with EchoTransport("echo-1", base_url=server.url, client=client) as t:
            await collect(t)
        assert not client.is_closed
        async with EchoTransport("echo-1", base_url=server.url, client=client) as t:
            assert len(await collect(t)) == 3


# --- credentials --------------------------------------------------------------------------------


def mock_client(seen: list[httpx.Request]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = b'data: {"t": "ok"}\n\ndata: {"end": true}\n\n'
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_env_key_goes_to_the_default_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen: list[httpx.Request] = []
    async with mock_client(seen) as client:
        t = EchoTransport("echo-1", client=client)
        assert len(await collect(t)) == 2
    [request] = seen
    assert request.url.host == "api.openai.com"
    assert request.url.path == "/v1/echo"
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_env_key_never_goes_to_a_custom_host(
    server: MisbehavingServer, make: Callable[..., EchoTransport], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.script(sse_stream(HELLO), json_reply({"text": "x"}))
    await collect(make(server.url))
    await collect(make(server.url, stream=False))
    assert len(server.requests) == 2
    for request in server.requests:
        assert "authorization" not in request.headers
        assert KEY not in json.dumps(request.headers)
        assert KEY.encode() not in request.body


@pytest.mark.parametrize(
    "base_url",
    [
        "http://api.openai.com/v1",  # the same host, but in the clear
        "https://api.openai.com:8443/v1",  # another port
        "https://api.openai.com.evil.test/v1",
        "https://evil.test/api.openai.com/v1",
    ],
)
async def test_env_key_is_bound_to_scheme_host_and_port(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen: list[httpx.Request] = []
    async with mock_client(seen) as client:
        await collect(EchoTransport("echo-1", base_url=base_url, client=client))
    assert "authorization" not in seen[0].headers


async def test_env_key_with_the_default_base_url_spelled_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen: list[httpx.Request] = []
    async with mock_client(seen) as client:
        await collect(EchoTransport("echo-1", base_url="https://API.openai.com/v1/", client=client))
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"


async def test_explicit_key_goes_to_a_custom_host(
    server: MisbehavingServer, make: Callable[..., EchoTransport], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    server.script(sse_stream(HELLO))
    await collect(make(server.url, api_key=KEY))
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_no_key_anywhere_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen: list[httpx.Request] = []
    async with mock_client(seen) as client:
        with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
            await collect(EchoTransport("echo-1", client=client))
    assert seen == []  # issue 38: the provider's host needs a key, so none is asked without


async def test_key_not_in_repr(
    make: Callable[..., EchoTransport], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for t in (make(None), make("http://127.0.0.1:9", api_key=KEY)):
        assert KEY not in repr(t)
        assert KEY not in str(t)
        assert "SECRET" not in repr(t)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize("reply", [unauthorized, echo_authorization], ids=["401", "401-echo"])
async def test_key_not_in_exceptions(
    server: MisbehavingServer,
    make: Callable[..., EchoTransport],
    stream: bool,
    reply: Callable[[], Reply],
) -> None:
    server.script(reply())
    exc = await failure(make(server.url, api_key=KEY, stream=stream))
    assert isinstance(exc, AuthenticationError)
    assert exc.status_code == 401
    assert not exc.retryable
    for text in (str(exc), repr(exc), str(exc.args)):
        assert KEY not in text
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_key_not_in_a_redirect_error(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(redirect(f"http://127.0.0.1:9/login?key={KEY}"))
    exc = await failure(make(server.url, api_key=KEY))
    assert isinstance(exc, BadRequestError) and exc.status_code == 307
    assert KEY not in str(exc)
    assert "key=***" in str(exc)


async def test_key_not_in_connection_errors(make: Callable[..., EchoTransport]) -> None:
    exc = await failure(make(f"http://127.0.0.1:{free_port()}", api_key=KEY))
    assert KEY not in str(exc) and KEY not in repr(exc)


async def test_key_not_in_debug_logs(
    server: MisbehavingServer,
    make: Callable[..., EchoTransport],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: tether's own, httpx's and httpcore's
    server.script(sse_stream(HELLO), unauthorized())
    t = make(server.url, api_key=KEY, headers={"X-Api-Key": KEY, "Cookie": f"k={KEY}"})
    await collect(t)
    with pytest.raises(AuthenticationError):
        await collect(t)
    ours = [r for r in caplog.records if r.name == "tether.http"]
    assert ours, "the transport logs its requests at DEBUG"
    assert "***" in ours[0].getMessage()
    assert server.url + "/echo" in ours[0].getMessage()
    for record in caplog.records:
        assert KEY not in record.getMessage(), record.name
    assert KEY not in caplog.text


# --- redirects ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_redirects_are_not_followed(
    server: MisbehavingServer, make: Callable[..., EchoTransport], stream: bool, status: int
) -> None:
    async with MisbehavingServer(sse_stream(HELLO), json_reply({"text": "x"})) as other:
        server.script(redirect(other.url + "/echo", status))
        exc = await failure(make(server.url, api_key=KEY, stream=stream))
        assert isinstance(exc, BadRequestError)
        assert not exc.retryable
        assert exc.status_code == status
        assert "redirect" in str(exc).lower()
        assert other.url in str(exc)
        assert other.requests == []
        assert other.connections == 0
    assert len(server.requests) == 1


# --- the non-streaming mode ---------------------------------------------------------------------


async def test_plain_mode_request_and_events(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(json_reply({"text": "whole"}))
    events = await collect(make(server.url, stream=False))
    assert events == [TextDelta(0, "whole"), IterationEnd(0, StopReason.END_TURN, Usage(3, 2))]
    [request] = server.requests
    assert request.json()["stream"] is False
    assert "text/event-stream" not in request.headers.get("accept", "")


async def test_plain_mode_through_the_agent_retries(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(rate_limited("2"), json_reply({"text": "whole"}))
    events, store = await run_agent(make(server.url, stream=False))
    assert len([e for e in events if isinstance(e, Retrying)]) == 1
    assert store.messages[-1].text == "whole"
    assert len(server.requests) == 2


async def test_plain_mode_malformed_json_is_a_clear_error(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(error_reply(200, '{"text": "trunc'))
    exc = await failure(make(server.url, stream=False))
    assert isinstance(exc, StreamInterruptedError)
    assert "malformed JSON" in str(exc)


async def test_plain_mode_dropped_body_is_retryable(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    server.script(raw_reply(head + b'{"text": '))
    exc = await failure(make(server.url, stream=False))
    assert isinstance(exc, ConnectionFailedError) and exc.retryable


async def test_cancelling_a_stream_closes_its_connection(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream(HI, hold=True))
    t = make(server.url)
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in t.stream(USER, [], ""):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    server.script(sse_stream(HELLO))
    assert len(await collect(t)) == 3
    assert server.connections == 2


# --- end to end through OpenAIChatTransport -----------------------------------------------------


def chat_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


USAGE_CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "model": "gpt-test",
    "choices": [],
    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
}
DONE = "data: [DONE]\n\n"


def chat_text(*pieces: str) -> list[Any]:
    return [
        chat_chunk({"role": "assistant", "content": ""}),
        *(chat_chunk({"content": p}) for p in pieces),
        chat_chunk({}, "stop"),
        USAGE_CHUNK,
        DONE,
    ]


def chat_tool_call(call_id: str, name: str, arguments: str) -> list[Any]:
    half = len(arguments) // 2
    call = {"index": 0, "id": call_id, "type": "function"}
    return [
        chat_chunk({"role": "assistant", "content": None}),
        chat_chunk({"tool_calls": [{**call, "function": {"name": name, "arguments": ""}}]}),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:half]}}]}),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}),
        chat_chunk({}, "tool_calls"),
        USAGE_CHUNK,
        DONE,
    ]


@pytest.fixture
async def chat() -> AsyncIterator[Callable[..., Any]]:
    from tether.transports.openai_chat import OpenAIChatTransport

    made: list[OpenAIChatTransport] = []

    def build(base_url: str | None, **kwargs: Any) -> OpenAIChatTransport:
        kwargs.setdefault("timeout", 5.0)
        t = OpenAIChatTransport("gpt-test", base_url=base_url, **kwargs)
        made.append(t)
        return t

    yield build
    for t in made:
        await t.aclose()


async def test_chat_agent_end_to_end_with_a_tool(
    server: MisbehavingServer, chat: Callable[..., Any]
) -> None:
    from tether import tool

    calls: list[str] = []

    @tool
    def shout(text: str) -> str:
        """Shout the text.

        Args:
            text: what to shout
        """
        calls.append(text)
        return text.upper()

    server.script(
        sse_stream(chat_tool_call("call_1", "shout", '{"text": "hey"}')),
        sse_stream(chat_text("HEY", " back")),
    )
    agent = Agent(system="sys", transport=chat(server.url + "/v1", max_tokens=50), tools=[shout])
    store = MemoryContextStore()
    assert await agent.run("go", store) == "HEY back"
    assert calls == ["hey"]
    first, second = (r.json() for r in server.requests)
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2
    assert first["stream"] is True
    assert first["max_tokens"] == 50  # a compatible server's field name
    assert first["messages"][0] == {"role": "system", "content": "sys"}
    assert first["tools"][0]["function"]["name"] == "shout"
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "HEY"}
    assert_history_valid(store.messages)


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_chat_stream_events_and_usage(
    server: MisbehavingServer, chat: Callable[..., Any], framing: Any
) -> None:
    server.script(sse_stream(chat_text("Hel", "lo"), framing=framing))
    events = await collect(chat(server.url))
    assert [e for e in events if isinstance(e, TextDelta)] == [
        TextDelta(0, "Hel"),
        TextDelta(0, "lo"),
    ]
    end = events[-1]
    assert isinstance(end, IterationEnd)
    assert end.stop_reason is StopReason.END_TURN
    assert end.usage == Usage(9, 2)
    assert end.model == "gpt-test"


async def test_chat_agent_retries_a_429_before_the_first_event(
    server: MisbehavingServer, chat: Callable[..., Any]
) -> None:
    server.script(rate_limited("2"), server_error(500), sse_stream(chat_text("ok")))
    events, store = await run_agent(chat(server.url))
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.attempt for r in retries] == [1, 2]
    assert retries[0].delay == pytest.approx(0.05)
    assert len(server.requests) == 3
    assert store.messages[-1].text == "ok"


async def test_chat_stream_dropped_mid_way(
    server: MisbehavingServer, chat: Callable[..., Any]
) -> None:
    server.script(
        dropped_stream([chat_chunk({"content": "Hel"}), chat_chunk({"content": "lo"})]),
        sse_stream(chat_text("again")),
    )
    events, store = await run_agent(chat(server.url))
    assert not [e for e in events if isinstance(e, Retrying)]
    assert len(server.requests) == 1
    end = events[-1]
    assert isinstance(end, SessionEndEvent)
    assert isinstance(end.error, StreamInterruptedError)
    assert [(m.role, m.text) for m in store.messages] == [("user", "hi"), ("assistant", "Hello")]
    assert_history_valid(store.messages)


async def test_chat_stream_cut_before_finish_reason_on_close_framing(
    server: MisbehavingServer, chat: Callable[..., Any]
) -> None:
    server.script(sse_stream([chat_chunk({"content": "Hel"})], framing="close"))
    exc = await failure(chat(server.url))
    assert isinstance(exc, StreamInterruptedError)


async def test_chat_truncated_json(server: MisbehavingServer, chat: Callable[..., Any]) -> None:
    server.script(sse_stream([chat_chunk({"content": "a"}), 'data: {"choices": [{"del\n\n']))
    exc = await failure(chat(server.url))
    assert isinstance(exc, StreamInterruptedError)
    assert "malformed" in str(exc)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])
@pytest.mark.parametrize(
    ("reply", "kind", "retryable"),
    [
        (lambda: rate_limited(http_date(30)), RateLimitError, True),
        (overloaded, OverloadedError, True),
        (unauthorized, AuthenticationError, False),
        (context_too_long, ContextWindowExceededError, False),
        (lambda: redirect("http://127.0.0.1:9/v1/chat/completions"), BadRequestError, False),
    ],
    ids=["429-date", "503", "401", "400-context", "307"],
)
async def test_chat_error_mapping(
    server: MisbehavingServer,
    chat: Callable[..., Any],
    stream: bool,
    reply: Callable[[], Reply],
    kind: type[TransportError],
    retryable: bool,
) -> None:
    server.script(reply())
    exc = await failure(chat(server.url, api_key=KEY, stream=stream))
    assert type(exc) is kind
    assert exc.retryable is retryable
    assert exc.status_code is not None
    assert KEY not in str(exc)
    if kind is RateLimitError:
        assert exc.retry_after is not None and 27 <= exc.retry_after <= 31


async def test_chat_plain_mode(server: MisbehavingServer, chat: Callable[..., Any]) -> None:
    server.script(
        json_reply(
            {
                "id": "chatcmpl-1",
                "model": "gpt-test",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "whole"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 4, "completion_tokens": 1},
            }
        )
    )
    events = await collect(chat(server.url, stream=False))
    assert events[0] == TextDelta(0, "whole")
    assert isinstance(events[-1], IterationEnd) and events[-1].usage == Usage(4, 1)
    assert "stream" not in server.requests[0].json()


async def test_chat_env_key_goes_only_to_openai(
    server: MisbehavingServer, chat: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = "".join(
            s if isinstance(s, str) else f"data: {json.dumps(s)}\n\n" for s in chat_text("ok")
        )
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        own = chat(None, client=client)
        assert KEY not in repr(own)
        await collect(own)
    assert str(seen[0].url) == "https://api.openai.com/v1/chat/completions"
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert "max_completion_tokens" not in json.loads(seen[0].content)

    server.script(sse_stream(chat_text("ok")))
    await collect(chat(server.url + "/v1"))
    assert "authorization" not in server.requests[0].headers
    await collect(chat(server.url + "/v1", api_key="sk-explicit"))
    assert server.requests[1].headers["authorization"] == "Bearer sk-explicit"


async def test_chat_pool_hygiene(server: MisbehavingServer, chat: Callable[..., Any]) -> None:
    server.script(sse_stream([chat_chunk({"content": "x"})], hold=True))
    t = chat(server.url, timeout=3.0)
    for _ in range(150):
        async for _event in t.stream(USER, [], ""):
            break
    assert len(server.requests) == 150


# --- a hostile provider: malformed data, echoed credentials, stalls, size -----------------------


def chain(exc: BaseException) -> str:
    """The text of ``exc`` and of every exception behind it, as a traceback would show them."""
    said: list[str] = []
    current: BaseException | None = exc
    while current is not None:
        said += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return "\n".join(said)


def assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text
        assert secret[:10] not in text, "a credential's head survived a cut"


async def test_a_codec_crash_on_an_event_is_a_typed_error(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(sse_stream([{"t": "ok"}, "data: [1, 2]\n\n"]))
    exc = await failure(make(server.url))
    assert type(exc) is StreamInterruptedError
    assert "malformed event" in str(exc) and "[1, 2]" in str(exc)


async def test_a_codec_crash_on_a_whole_response_is_a_typed_error(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(json_reply({"answer": "no text field"}))
    exc = await failure(make(server.url, stream=False))
    assert type(exc) is StreamInterruptedError
    assert "no 'text' field" in str(exc) and '"answer": "no text field"' in str(exc)


async def test_deeply_nested_json_response_is_a_typed_error(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(error_reply(200, "[" * 100_000 + "]" * 100_000))
    exc = await failure(make(server.url, stream=False))
    assert type(exc) is StreamInterruptedError and "malformed JSON" in str(exc)


async def test_chat_wrong_field_type_in_a_stream_is_a_typed_error(
    server: MisbehavingServer, chat: Callable[..., Any]
) -> None:
    bad = chat_chunk({}, finish=["stop"])  # type: ignore[arg-type]
    server.script(sse_stream([chat_chunk({"content": "Hel"}), bad, DONE]))
    got: list[Any] = []
    with pytest.raises(StreamInterruptedError) as info:
        async for event in chat(server.url).stream(USER, [], ""):
            got.append(event)
    assert got == [TextDelta(0, "Hel")]
    assert '"finish_reason": ["stop"]' in str(info.value)
    assert "finish_reason is a list, not a string" in str(info.value)


def _error_events() -> dict[str, tuple[str, list[Any]]]:
    said = f"Incorrect API key provided: {KEY}. Header was Bearer {KEY}"
    return {
        "openai_chat": (
            "OpenAIChatTransport",
            [{"error": {"message": said, "type": "invalid_request_error", "code": None}}],
        ),
        "openai_responses": (
            "OpenAIResponsesTransport",
            [{"type": "error", "code": "invalid_api_key", "message": said, "param": None}],
        ),
        "anthropic": (
            "AnthropicTransport",
            [
                "event: error\ndata: "
                + json.dumps({"type": "error", "error": {"type": "api_error", "message": said}})
                + "\n\n"
            ],
        ),
    }


@pytest.mark.parametrize("name", ["openai_chat", "openai_responses", "anthropic"])
async def test_a_key_echoed_in_a_stream_error_event_is_blanked(
    server: MisbehavingServer, name: str
) -> None:
    cls_name, events = _error_events()[name]
    server.script(sse_stream(events))
    async with getattr(transports, cls_name)("m", base_url=server.url, api_key=KEY) as t:
        exc = await failure(t)
    assert "Incorrect API key provided: ***" in str(exc)
    assert_no_secret(chain(exc), KEY)
    assert_no_secret(str(exc.args), KEY)


async def test_a_key_echoed_in_a_200_error_body_is_blanked(
    server: MisbehavingServer, chat: Callable[..., Any]
) -> None:
    server.script(json_reply({"error": {"message": f"bad key {KEY}", "code": 401}}))
    exc = await failure(chat(server.url, api_key=KEY, stream=False))
    assert isinstance(exc, AuthenticationError)
    assert "bad key ***" in str(exc)
    assert_no_secret(chain(exc), KEY)


async def test_a_key_in_a_malformed_chunk_is_blanked_in_the_quote_and_its_cause(
    server: MisbehavingServer, chat: Callable[..., Any]
) -> None:
    bad = {"choices": [{"index": 0, "delta": {}}], "usage": {"prompt_tokens": KEY}, "k": KEY}
    server.script(sse_stream([bad]))
    exc = await failure(chat(server.url, api_key=KEY))
    assert isinstance(exc, StreamInterruptedError)
    assert '"prompt_tokens": "***"' in str(exc)
    assert_no_secret(chain(exc), KEY)


@pytest.mark.parametrize("head", [4, 10, 17, len(KEY) - 1])
async def test_a_key_cut_in_half_by_the_quote_is_blanked(
    server: MisbehavingServer, chat: Callable[..., Any], head: int
) -> None:
    # The quoted fragment is cut at 500 characters; put the key across that cut.
    prefix = '{"choices": [{"index": 0, "delta": {"content": 5}}], "pad": "'
    pad = "x" * (500 - len(prefix) - head)
    server.script(sse_stream([f'data: {prefix}{pad}{KEY}tail"}}\n\n']))
    exc = await failure(chat(server.url, api_key=KEY))
    assert isinstance(exc, StreamInterruptedError)
    assert "…" in str(exc)  # it was cut
    assert_no_secret(chain(exc), KEY)
    assert KEY[:head] not in str(exc)


async def test_custom_credential_headers_never_reach_error_text(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    secrets = {
        "X-Goog-Api-Key": "goog-SECRET-0001112223",
        "X-Auth-Token": "auth-SECRET-4445556667",
        "X-Session-Id": "sess-SECRET-8889990001",
        "X-Request-Signature": "sig-SECRET-2223334445",
    }
    server.script(echo_headers())
    exc = await failure(make(server.url, headers=secrets))
    assert isinstance(exc, BadRequestError)
    assert "x-goog-api-key=***" in str(exc)
    assert_no_secret(chain(exc), *secrets.values())


async def test_custom_credential_headers_and_set_cookie_never_reach_logs(
    server: MisbehavingServer,
    make: Callable[..., EchoTransport],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="tether.http")
    cookie = "session=cookie-SECRET-1234567890"
    server.script(sse_stream(HELLO, headers=[("Set-Cookie", cookie)]))
    headers = {"X-Goog-Api-Key": "goog-SECRET-0001112223", "X-Auth-Token": "auth-SECRET-4445"}
    await collect(make(server.url, headers=headers))
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "tether.http")
    assert "'x-goog-api-key': '***'" in logged.lower()
    assert "'set-cookie': '***'" in logged
    assert "SECRET" not in logged


async def test_url_userinfo_is_sent_but_never_shown(
    server: MisbehavingServer,
    make: Callable[..., EchoTransport],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="tether.http")
    password = "pw-SECRET-0123456789"
    basic = base64.b64encode(f"alice:{password}".encode()).decode()
    base = server.url.replace("http://", f"http://alice:{password}@") + "/v1"
    server.script(sse_stream(HELLO), echo_authorization())
    t = make(base)
    assert t.base_url == server.url + "/v1"
    assert_no_secret(repr(t) + str(t), password)
    assert len(await collect(t)) == 3
    assert server.requests[0].headers["authorization"] == f"Basic {basic}"
    assert server.requests[0].path == "/v1/echo"
    exc = await failure(t)  # the server echoes the Basic credentials back
    assert isinstance(exc, AuthenticationError)
    assert_no_secret(chain(exc), password, basic)
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "tether.http")
    assert f"POST {server.url}/v1/echo" in logged
    assert_no_secret(logged, password, basic)


async def test_a_huge_provider_error_message_is_cut(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(error_reply(400, {"error": {"message": "m" * 200_000}}))
    exc = await failure(make(server.url))
    assert isinstance(exc, BadRequestError)
    assert len(str(exc)) < 2_000
    assert "(200000 characters)" in str(exc)


async def test_a_huge_error_event_message_is_cut(
    server: MisbehavingServer, chat: Callable[..., Any]
) -> None:
    server.script(sse_stream([{"error": {"message": "m" * 200_000, "type": "server_error"}}]))
    exc = await failure(chat(server.url))
    assert isinstance(exc, ServerError)
    assert len(str(exc)) < 2_000


@pytest.mark.timeout(10)
async def test_an_sse_event_past_max_event_bytes_is_refused(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    big = 'data: {"t": "' + "x" * 5000 + '"}\n\n'
    server.script(sse_stream([big[i : i + 100] for i in range(0, len(big), 100)]))
    exc = await failure(make(server.url, max_event_bytes=1000))
    assert type(exc) is StreamInterruptedError
    assert "an SSE event exceeded 1000 bytes" in str(exc)
    server.script(sse_stream([big, {"end": True}]))
    assert len(await collect(make(server.url, max_event_bytes=10_000))) == 2


async def test_a_whole_response_past_max_event_bytes_is_refused(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(json_reply({"text": "y" * 5000}))
    exc = await failure(make(server.url, stream=False, max_event_bytes=1000))
    assert type(exc) is StreamInterruptedError
    assert "exceeded 1000 bytes" in str(exc)


def keep_alive_forever(*events: Any) -> Reply:
    """Some events, then only ``: ping`` comments, which reset httpx's read timeout each time."""
    return sse_stream([*events, *[": ping\n\n"] * 10_000], delay=0.02)


@pytest.mark.timeout(10)
async def test_keep_alive_comments_cannot_outlast_the_deadline(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(keep_alive_forever())
    exc = await failure(make(server.url, timeout=5.0, deadline=0.5))
    assert type(exc) is ConnectionFailedError and exc.retryable
    assert "ran past its deadline of 0.5 s" in str(exc)


@pytest.mark.timeout(10)
async def test_the_deadline_after_the_first_event_is_an_interruption(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(keep_alive_forever({"t": "Hel"}))
    got: list[Any] = []
    with pytest.raises(StreamInterruptedError) as info:
        async for event in make(server.url, timeout=5.0, deadline=0.5).stream(USER, [], ""):
            got.append(event)
    assert got == [TextDelta(0, "Hel")]
    assert not info.value.retryable
    assert "deadline" in str(info.value)


@pytest.mark.timeout(10)
async def test_the_deadline_bounds_a_plain_request(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(slow_headers(30.0))
    exc = await failure(make(server.url, timeout=5.0, deadline=0.3, stream=False))
    assert type(exc) is ConnectionFailedError and exc.retryable
    assert "deadline" in str(exc)


@pytest.mark.timeout(10)
async def test_the_deadline_never_cancels_the_caller_between_events(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    # The caller holds each event past the deadline: its own awaits must run undisturbed, and
    # the call ends at its next read with the deadline error.
    server.script(sse_stream([{"t": "a"}, {"t": "b"}], delay=0.05, hold=True))
    stream = make(server.url, deadline=1.0).stream(USER, [], "")  # room for the first event
    assert await anext(stream) == TextDelta(0, "a")
    await asyncio.sleep(1.5)  # would raise CancelledError if the deadline reached the caller
    with pytest.raises(StreamInterruptedError, match="deadline"):
        await anext(stream)
    await stream.aclose()


@pytest.mark.timeout(10)
async def test_agent_retries_a_call_that_hit_its_deadline_before_any_event(
    server: MisbehavingServer, make: Callable[..., EchoTransport]
) -> None:
    server.script(keep_alive_forever(), sse_stream(HELLO))
    events, store = await run_agent(make(server.url, timeout=5.0, deadline=0.5))
    [retry] = [e for e in events if isinstance(e, Retrying)]
    assert "ConnectionFailedError" in retry.reason
    assert store.messages[-1].text == "Hello"


def test_deadline_and_size_options_are_checked() -> None:
    assert EchoTransport("m").deadline == 600.0
    assert EchoTransport("m").max_event_bytes == 16 * 1024 * 1024
    assert EchoTransport("m", deadline=None).deadline is None
    with pytest.raises(ValueError, match="deadline"):
        EchoTransport("m", deadline=0)
    with pytest.raises(ValueError, match="max_event_bytes"):
        EchoTransport("m", max_event_bytes=0)
