"""Approvals: calls that wait for a person, across processes.

``approval=`` names the tools whose calls wait. The run stores the model's calls, runs the others
and stops with ``RunPaused``; later (any process on the same store) ``agent.resume`` approves or
denies each waiting call and the run goes on. The model is scripted. From the repository root:

    .venv/bin/python examples/04_approvals.py
"""

import asyncio
import tempfile
from pathlib import Path

from tether import Agent, RunPaused, tool
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, Request, ScriptedTransport


@tool
def list_files(folder: str) -> list[str]:
    """The files in a folder."""
    return ["notes.txt", "old.log", "report.pdf"]


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def summary(request: Request) -> Reply:
    """The scripted model's last reply: what each decided call said, in the order of the calls."""
    calls = next(m for m in reversed(request.messages) if m.role == "assistant").tool_uses
    results = {r.tool_use_id: r.text for m in request.messages for r in m.tool_results}
    return Reply("; ".join(results[call.id] for call in calls))


model = ScriptedTransport(
    [
        Reply(tool_calls=[Call("list_files", {"folder": "."})]),
        Reply(
            tool_calls=[
                Call("delete_file", {"path": "old.log"}, id="del-1"),
                Call("delete_file", {"path": "report.pdf"}, id="del-2"),
            ]
        ),
        summary,
    ]
)
agent = Agent(
    system="You tidy folders.", transport=model, tools=[list_files, delete_file],
    approval={"delete_file"},
)  # fmt: skip


async def main(db: Path) -> None:
    async with SQLiteStore(db) as store:
        try:
            await agent.run("Tidy up this folder.", await store.open("tidy-1"))
        except RunPaused as paused:
            for call in paused.pending:
                print(f"waiting: {call.id} {call.name}({call.input})")

    # Hours later, perhaps in another process: a person decides.
    async with SQLiteStore(db) as store:
        answer = await agent.resume(
            await store.open("tidy-1"), approve=["del-1"], deny={"del-2": "keep the report"}
        )
        print(answer)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp) / "chats.db"))
