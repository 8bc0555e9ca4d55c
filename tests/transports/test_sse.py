"""SSE framing: the same events however the bytes are chunked, and the WHATWG line rules."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether.errors import StreamInterruptedError
from tether.transports.sse import SSEDecoder, SSEEvent


def decode(chunks: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    out: list[SSEEvent] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.flush())
    return out


def split_at(body: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *sorted(set(cuts)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(points)]


def every_split(body: bytes) -> list[list[bytes]]:
    """Every way to cut ``body`` in two, plus one byte at a time."""
    ways = [[body[:i], body[i:]] for i in range(len(body) + 1)]
    ways.append([body[i : i + 1] for i in range(len(body))])
    return ways


# --- a structured model of a stream, serialised with mixed line endings -------------------------

# Everything but CR and LF (and surrogates, which UTF-8 cannot carry); U+2028/U+2029, NEL, VT and
# FF are deliberately likely: they are line breaks for str.splitlines but not for SSE.
_LINE_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from("\u2028\u2029\x85\x0b\x0c\x1c:é€😀 \t{}\"'"),
        st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
    ),
    max_size=12,
)


def _data(value: str) -> tuple[str, str]:
    return ("data", value)


_FIELD = st.one_of(
    _LINE_TEXT.map(_data),
    _LINE_TEXT.map(lambda v: ("comment", v)),
    _LINE_TEXT.map(lambda v: ("event", v)),
    _LINE_TEXT.filter(lambda v: "\0" not in v).map(lambda v: ("id", v)),
    st.integers(0, 10**6).map(lambda n: ("retry", str(n))),
    st.sampled_from(["1e3", "x", "-5", "²", "١٢", ""]).map(lambda v: ("retry", v)),
)

# An event: its fields, and whether its lines are written "name: value" or "name:value".
_EVENT = st.tuples(st.lists(_FIELD, min_size=1, max_size=6), st.booleans())


def _field_line(name: str, value: str, spaced: bool) -> str:
    if name == "comment":
        return ":" + value
    if spaced or value.startswith(" "):
        return f"{name}: {value}"  # one space is stripped; the value keeps any of its own
    return f"{name}:{value}"


def _expected(events: list[tuple[list[tuple[str, str]], bool]]) -> list[SSEEvent]:
    out: list[SSEEvent] = []
    last_id: str | None = None
    retry: int | None = None
    for fields, _ in events:
        data: list[str] = []
        kind = ""
        for name, value in fields:
            if name == "data":
                data.append(value)
            elif name == "event":
                kind = value
            elif name == "id":
                last_id = value
            elif name == "retry" and value.isascii() and value.isdigit():
                retry = int(value)
        if data:
            out.append(SSEEvent(kind or "message", "\n".join(data), last_id, retry))
    return out


def _serialise(
    events: list[tuple[list[tuple[str, str]], bool]], endings: list[str], final_blank: bool
) -> bytes:
    lines: list[str] = []
    for i, (fields, spaced) in enumerate(events):
        lines.extend(_field_line(n, v, spaced) for n, v in fields)
        if i < len(events) - 1 or final_blank:
            lines.append("")
    parts: list[str] = []
    previous = ""
    for i, line in enumerate(lines):
        ending = endings[i % len(endings)]
        # A CR that ends one line and an LF that ends the next (empty) line would read as one
        # CRLF: write that empty line's end as CRLF instead, which keeps both line breaks.
        if previous == "\r" and line == "" and ending == "\n":
            ending = "\r\n"
        parts.append(line + ending)
        previous = ending
    return "".join(parts).encode("utf-8")


@fuzz(300)
@given(
    events=st.lists(_EVENT, min_size=1, max_size=5),
    endings=st.lists(st.sampled_from(["\r\n", "\r", "\n"]), min_size=1, max_size=8),
    final_blank=st.booleans(),
    data=st.data(),
)
def test_arbitrary_chunking_gives_the_same_events(
    events: list[tuple[list[tuple[str, str]], bool]],
    endings: list[str],
    final_blank: bool,
    data: st.DataObject,
) -> None:
    body = _serialise(events, endings, final_blank)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=12), label="cuts")
    expected = _expected(events)
    assert decode([body]) == expected
    assert decode(split_at(body, cuts)) == expected


@fuzz(200)
@given(st.binary(max_size=200), st.lists(st.integers(0, 200), max_size=8))
def test_any_bytes_never_crash_and_chunking_never_matters(body: bytes, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c <= len(body)]
    assert decode(split_at(body, cuts)) == decode([body])


_LINE_BYTES = st.sampled_from([b"data:", b"data: ", b": ", b"event: e", b"\n", b"\r", b"\r\n"])


@fuzz(200)
@given(
    body=st.lists(_LINE_BYTES | st.binary(max_size=30), max_size=20).map(b"".join),
    cuts=st.lists(st.integers(0, 600), max_size=8),
    cap=st.integers(1, 40),
)
def test_under_a_cap_any_bytes_give_small_events_or_the_typed_error(
    body: bytes, cuts: list[int], cap: int
) -> None:
    # Chunked, an unfinished line is measured as it grows: it may be refused where one whole
    # chunk was not, never the other way round, and what it gives is what the whole body gives.
    def capped(chunks: list[bytes]) -> list[SSEEvent] | None:
        decoder = SSEDecoder(max_event_bytes=cap)
        try:
            return [e for chunk in chunks for e in decoder.feed(chunk)] + decoder.flush()
        except StreamInterruptedError as exc:
            assert f"exceeded {cap} bytes" in str(exc)
            return None

    chunked = capped(split_at(body, [c for c in cuts if c <= len(body)]))
    if chunked is not None:
        assert capped([body]) == chunked
        assert all(len(event.data) <= cap for event in chunked)


# --- fixed cases --------------------------------------------------------------------------------

BODY = (
    b": keep-alive comment\r\n"
    b"retry: 3000\r\n"
    b"event: first\r\n"
    b"id: 1\r\n"
    b'data: {"t": "a"}\r\n'
    b"\r\n"
    b"data: line one\r"
    b"data: line two\r"
    b"\r"
    b"event: third\n"
    b"data:no space\n"
    b"data:  two spaces\n"
    b"\n"
    b"data: caf\xc3\xa9 \xf0\x9f\x98\x80\n"
    b"\n"
)
BODY_EVENTS = [
    SSEEvent("first", '{"t": "a"}', "1", 3000),
    SSEEvent("message", "line one\nline two", "1", 3000),
    SSEEvent("third", "no space\n two spaces", "1", 3000),
    SSEEvent("message", "café 😀", "1", 3000),
]


def test_fixed_body_decodes() -> None:
    assert decode([BODY]) == BODY_EVENTS


def test_split_at_every_byte_position_gives_the_same_events() -> None:
    for chunks in every_split(BODY):
        assert decode(chunks) == BODY_EVENTS, chunks


def test_events_are_returned_as_soon_as_they_complete() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"\n") == [SSEEvent("message", "a")]
    assert decoder.feed(b"data: b\n\ndata: c\n\ndata: d") == [
        SSEEvent("message", "b"),
        SSEEvent("message", "c"),
    ]
    assert decoder.flush() == [SSEEvent("message", "d")]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c"])
def test_unicode_line_separators_inside_data_are_not_line_breaks(separator: str) -> None:
    payload = f'{{"t": "a{separator}b"}}'
    body = f"data: {payload}\n\n".encode()
    for chunks in every_split(body):
        assert decode(chunks) == [SSEEvent("message", payload)]


def test_crlf_split_across_chunks_gives_no_spurious_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n") == []  # the LF of the CRLF, not an empty line
    assert decoder.feed(b"data: b\r") == []
    assert decoder.feed(b"\ndata: c\r\n\r") == [SSEEvent("message", "a\nb\nc")]
    assert decoder.feed(b"\n") == []
    assert decoder.flush() == []


def test_cr_then_a_split_utf8_character_is_not_taken_for_crlf() -> None:
    # After a CR the next chunk decodes to nothing (half a character): the CR state must survive
    # it and then be dropped, since what follows is not an LF.
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\xc3") == []
    assert decoder.feed(b"\xa9: x\r\r") == [SSEEvent("message", "a")]
    assert decoder.flush() == []


def test_lone_cr_line_endings() -> None:
    assert decode([b"data: a\r\rdata: b\r\r"]) == [
        SSEEvent("message", "a"),
        SSEEvent("message", "b"),
    ]


@pytest.mark.parametrize("text", ["é", "€", "😀", "日本語", "a😀b€c"])
def test_multibyte_utf8_split_across_chunks_decodes_right(text: str) -> None:
    body = f"data: {text}\n\n".encode()
    for chunks in every_split(body):
        assert decode(chunks) == [SSEEvent("message", text)]


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert decode([b"data: a\xffb\n\n"]) == [SSEEvent("message", "a\ufffdb")]


def test_truncated_utf8_at_the_end_is_replaced_on_flush() -> None:
    assert decode([b"data: a\xe2\x82"]) == [SSEEvent("message", "a\ufffd")]


def test_flush_dispatches_a_final_event_without_a_trailing_blank_line() -> None:
    for body in (b"data: last", b"data: last\n", b"data: last\r\n", b"data: last\r"):
        decoder = SSEDecoder()
        assert decoder.feed(body) == []
        assert decoder.flush() == [SSEEvent("message", "last")], body


def test_flush_with_nothing_pending_gives_nothing() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n: comment\nevent: x\n") == [SSEEvent("message", "a")]
    assert decoder.flush() == []


def test_field_without_colon() -> None:
    assert decode([b"data\n\n"]) == [SSEEvent("message", "")]
    assert decode([b"data\ndata\n\n"]) == [SSEEvent("message", "\n")]
    # "event" with no value leaves the default type; an unknown bare name is ignored
    assert decode([b"event\nbogus\ndata: x\n\n"]) == [SSEEvent("message", "x")]


def test_empty_data_is_still_an_event() -> None:
    assert decode([b"data:\n\n"]) == [SSEEvent("message", "")]
    assert decode([b"data: \n\n"]) == [SSEEvent("message", "")]


def test_leading_space_stripped_only_once() -> None:
    assert decode([b"data:x\n\n"]) == [SSEEvent("message", "x")]
    assert decode([b"data: x\n\n"]) == [SSEEvent("message", "x")]
    assert decode([b"data:  x\n\n"]) == [SSEEvent("message", " x")]
    assert decode([b"data:   x \n\n"]) == [SSEEvent("message", "  x ")]
    assert decode([b"event:  spaced\ndata: x\n\n"]) == [SSEEvent(" spaced", "x")]
    assert decode([b"data:\tx\n\n"]) == [SSEEvent("message", "\tx")]


def test_value_may_contain_colons() -> None:
    assert decode([b"data: a: b:c\n\n"]) == [SSEEvent("message", "a: b:c")]


def test_comments_and_unknown_fields_are_ignored() -> None:
    body = b": hi\n:\nfoo: bar\ndata: x\n: between\ndata: y\n\n"
    assert decode([body]) == [SSEEvent("message", "x\ny")]


def test_event_without_data_is_not_dispatched_and_resets_the_type() -> None:
    body = b"event: ping\n\ndata: x\n\n"
    assert decode([body]) == [SSEEvent("message", "x")]


def test_id_persists_and_nul_ids_are_ignored() -> None:
    body = b"id: 7\ndata: a\n\ndata: b\n\nid: bad\x00id\ndata: c\n\nid\ndata: d\n\n"
    assert decode([body]) == [
        SSEEvent("message", "a", "7"),
        SSEEvent("message", "b", "7"),
        SSEEvent("message", "c", "7"),
        SSEEvent("message", "d", ""),
    ]


@pytest.mark.parametrize("value", ["abc", "1.5", "-1", "", "  5", "²", "١٢", "1e3"])
def test_retry_must_be_ascii_digits(value: str) -> None:
    body = f"retry: 100\ndata: a\n\nretry:{value}\ndata: b\n\n".encode()
    assert decode([body]) == [
        SSEEvent("message", "a", None, 100),
        SSEEvent("message", "b", None, 100),
    ]


def test_a_leading_byte_order_mark_is_ignored() -> None:
    body = b"\xef\xbb\xbfdata: a\n\n"
    for chunks in every_split(body):
        assert decode(chunks) == [SSEEvent("message", "a")]
    # only one, and only at the very start
    assert decode([b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n"]) == []
    assert decode([b"data: \xef\xbb\xbfa\n\n"]) == [SSEEvent("message", "\ufeffa")]


def test_long_line_in_many_small_chunks() -> None:
    payload = "x" * 50_000
    body = f"data: {payload}\n\n".encode()
    chunks = [body[i : i + 7] for i in range(0, len(body), 7)]
    assert decode(chunks) == [SSEEvent("message", payload)]


def test_empty_chunks_are_harmless() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\n\n") == [SSEEvent("message", "a")]


# --- size: linear time, and a cap -----------------------------------------------------------------


@pytest.mark.timeout(30)
def test_a_multi_megabyte_line_in_small_chunks_completes() -> None:
    # Joining the pending line on every chunk would copy ~128 GB here: the timeout fails it.
    payload = b"x" * (8 * 1024 * 1024)
    body = b"data: " + payload + b"\n\n"
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for i in range(0, len(body), 256):
        events.extend(decoder.feed(body[i : i + 256]))
    assert len(events) == 1
    assert events[0].data == payload.decode()


def test_default_cap_is_sixteen_mebibytes() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: " + b"x" * (16 * 1024 * 1024 - 10))
    with pytest.raises(StreamInterruptedError, match="exceeded 16777216 bytes"):
        decoder.feed(b"x" * 20)


@pytest.mark.parametrize("size", [1, 7, 100, 5000])
def test_an_unfinished_line_past_the_cap_is_refused(size: int) -> None:
    body = b"data: " + b"y" * 5000
    decoder = SSEDecoder(max_event_bytes=1000)
    with pytest.raises(StreamInterruptedError, match="an SSE event exceeded 1000 bytes"):
        for i in range(0, len(body), size):
            decoder.feed(body[i : i + size])


def test_a_comment_line_past_the_cap_is_refused() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    decoder.feed(b": " + b"z" * 60)
    with pytest.raises(StreamInterruptedError, match="exceeded 100 bytes"):
        decoder.feed(b"z" * 60)


def test_an_event_whose_data_lines_add_up_past_the_cap_is_refused() -> None:
    decoder = SSEDecoder(max_event_bytes=1000)
    line = b"data: " + b"d" * 99 + b"\n"  # 100 bytes of data each, with the joining LF
    assert decoder.feed(line * 10) == []
    with pytest.raises(StreamInterruptedError, match="exceeded 1000 bytes"):
        decoder.feed(line)


def test_data_up_to_the_cap_is_fine_and_the_count_restarts_per_event() -> None:
    decoder = SSEDecoder(max_event_bytes=1000)
    event = b"data: " + b"a" * 1000 + b"\n\n"
    for _ in range(3):
        assert decoder.feed(event) == [SSEEvent("message", "a" * 1000)]
    with pytest.raises(StreamInterruptedError):
        decoder.feed(b"data: " + b"a" * 1001 + b"\n\n")


def test_no_cap_when_none() -> None:
    decoder = SSEDecoder(max_event_bytes=None)
    assert decoder.feed(b"data: " + b"b" * 100_000 + b"\n\n")[0].data == "b" * 100_000


def test_a_retry_too_long_to_be_a_number_is_ignored() -> None:
    body = b"retry: " + b"9" * 5000 + b"\ndata: a\n\n"
    assert decode([body]) == [SSEEvent("message", "a")]
