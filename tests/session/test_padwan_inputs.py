"""What ``send``/``stream`` take besides text and a ``Message``, as padwan-ai's do: a list of
OpenAI content parts (text, images as ``data:`` or http(s) URLs, audio), read into one user
message; a part tether cannot read is refused, naming it."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pydantic import BaseModel

from tether import AudioBlock, ImageBlock, Message, TextBlock
from tether.session import AgentSession
from tether.testing import Reply, ScriptedTransport

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode("ascii")
WAV = base64.b64encode(b"RIFF fake").decode("ascii")


def image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


async def test_send_takes_text_and_image_parts_as_one_user_message() -> None:
    model = ScriptedTransport([Reply("a cat")])
    session = AgentSession(model)
    parts = [{"type": "text", "text": "What is this?"}, image(f"data:image/png;base64,{PNG}")]
    assert await session.send(parts) == "a cat"
    sent = model.requests[0].messages
    assert list(sent) == [
        Message("user", (TextBlock("What is this?"), ImageBlock("image/png", PNG)))
    ]
    assert session.messages[0] == sent[0]


async def test_stream_takes_parts_with_a_remote_image_and_audio() -> None:
    model = ScriptedTransport([Reply("heard and seen")])
    session = AgentSession(model)
    parts = [
        image("https://img.example/cat.jpeg?size=2"),
        image("https://img.example/picture"),
        {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
        {"type": "input_audio", "input_audio": {"data": WAV, "format": "mp3"}},
    ]
    chunks = [chunk async for chunk in session.stream(parts)]
    assert "".join(chunks) == "heard and seen"
    (message,) = model.requests[0].messages
    assert message.content == (
        ImageBlock("image/jpeg", url="https://img.example/cat.jpeg?size=2"),
        ImageBlock("image/*", url="https://img.example/picture"),
        AudioBlock("audio/wav", WAV),
        AudioBlock("audio/mpeg", WAV),
    )


class Answer(BaseModel):
    word: str


async def test_a_typed_answer_to_parts_sends_the_parts_and_asks_in_the_instructions() -> None:
    model = ScriptedTransport([Reply('{"word": "cat"}')])
    session = AgentSession(model)
    parts = [image(f"data:image/png;base64,{PNG}")]
    assert await session.send(parts, output=Answer) == Answer(word="cat")
    (message,) = model.requests[0].messages
    assert message.content == (ImageBlock("image/png", PNG),)
    assert '"word"' in model.requests[0].system


@pytest.mark.parametrize(
    ("parts", "error", "says"),
    [
        ([], ValueError, "no parts"),
        (["plain text"], TypeError, "part 0"),
        ([{"type": "text", "text": "a"}, {"text": "no type"}], ValueError, "part 1"),
        ([{"type": "video_url", "video_url": {}}], ValueError, "'video_url'"),
        ([{"type": "text", "text": 3}], TypeError, "part 0: 'text'"),
        ([{"type": "image_url", "image_url": "https://x.example/a.png"}], TypeError, "image_url"),
        ([image("ftp://x.example/a.png")], ValueError, "data: or http(s)"),
        ([image("file:///etc/passwd")], ValueError, "part 0"),
        ([image("data:image/png,not-base64-marked")], ValueError, "base64"),
        ([image("data:image/png;base64,@@@")], ValueError, "not valid base64"),
        ([image(f"data:text/plain;base64,{PNG}")], ValueError, "not an image"),
        (
            [{"type": "image_url", "image_url": {"url": "https://x.example/a", "detail": "low"}}],
            ValueError,
            "'detail'",
        ),
        (
            [{"type": "input_audio", "input_audio": {"data": WAV, "format": "flac"}}],
            ValueError,
            "wav or mp3",
        ),
        (
            [{"type": "input_audio", "input_audio": {"data": "@@", "format": "wav"}}],
            ValueError,
            "base64",
        ),
        ([{"type": "text", "text": "a", "extra": 1}], ValueError, "'extra'"),
    ],
)
async def test_a_part_tether_cannot_read_is_refused_naming_it(
    parts: list[Any], error: type[Exception], says: str
) -> None:
    model = ScriptedTransport([])
    session = AgentSession(model)
    with pytest.raises(error) as raised:
        await session.send(parts)
    assert says in str(raised.value)
    with pytest.raises(error):
        session.stream(parts)  # refused at the call, before any run
    assert model.requests == [] and session.messages == []


async def test_other_inputs_are_refused_by_name() -> None:
    session = AgentSession(ScriptedTransport([]))
    with pytest.raises(TypeError, match="str, a Message or a list of content parts"):
        await session.send({"type": "text", "text": "a dict, not a list"})  # type: ignore[arg-type]
