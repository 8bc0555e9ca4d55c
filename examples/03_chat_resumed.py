"""A chat kept in a SQLite file, then resumed by a new session, as a later process would.

``AgentSession`` keeps the conversation between sends; with a tether store every message is
durable as soon as it is appended. The model is scripted (no network, no key). From the
repository root:

    .venv/bin/python examples/03_chat_resumed.py
"""

import asyncio
import tempfile
from pathlib import Path

from tether import AgentSession
from tether.stores import SQLiteStore
from tether.testing import Reply, Request, ScriptedTransport


def remembering_model(request: Request) -> Reply:
    """Answers from the whole history it is sent, as a real model would."""
    said = [m.text for m in request.messages if m.role == "user"]
    if len(said) == 1:
        return Reply(f"Nice to meet you. ({len(request.messages)} message in my view)", chunks=3)
    name = said[0].removeprefix("Hi, I am ").rstrip(".")
    return Reply(f"You are {name}. ({len(request.messages)} messages in my view)", chunks=3)


model = ScriptedTransport([], then=remembering_model)


async def chat(db: Path, text: str) -> None:
    """One turn of the chat "chat-1", on a session opened afresh from the store."""
    async with (
        SQLiteStore(db) as store,
        AgentSession(client=model, system="Be brief.", store=store, session_id="chat-1") as s,
    ):
        print(f"you:   {text}")
        print("agent: ", end="")
        async for chunk in s.stream(text):
            print(chunk, end="", flush=True)
        print(f"\n       ({len(s.messages)} messages stored)")


async def main(db: Path) -> None:
    await chat(db, "Hi, I am Ann.")
    print("-- the program ends; later, a new one opens the same chat --")
    await chat(db, "Who am I?")
    async with SQLiteStore(db) as store:
        for info in await store.sessions():
            print(f"stored: {info.session_id}, {info.messages} messages")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp) / "chats.db"))
