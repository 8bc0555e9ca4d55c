"""What a long tool loop costs the client as its history grows: a ``--rounds`` iteration loop with
2 KB tool results against a local OpenAI-compatible fake server in its own process
(``bench/fake_openai.py``), run by tether, by tether with ``Compaction`` and by a hand-written
httpx + json loop doing the same, in turn in one process. Client CPU per iteration (process time,
so the server's and the wait's are not counted) and request size around iterations 10, 100 and
300.

    python bench/long_run.py            # 300 rounds, 3 repetitions each
    python bench/long_run.py --quick    # 40 rounds, once: proves it still runs
    python bench/long_run.py --local 12 # 12 rounds on the real local model: per iteration, the
                                        # prompt tokens it evaluated beside those that were new

On the local model (llama.cpp keeps the prompt's prefix cached), an iteration should evaluate
only what was added since the last one: prompt minus cache read within new tokens + 10 %.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tether import Agent, Compaction, IterationEnd, IterationStart, tool
from tether.transports import OpenAIChatTransport

HERE = Path(__file__).resolve().parent
RESULT = "r" * 2048  # each tool result: 2 KB
COMPACT_AT = 16_000  # tokens (the fake server counts bytes / 4): about 30 iterations of results
SYSTEM = "You work in steps: call step until the work is done."
TOOL = {
    "type": "function",
    "function": {
        "name": "step",
        "description": "One step of the work.",
        "parameters": {
            "type": "object",
            "properties": {"i": {"type": "integer"}},
            "required": ["i"],
        },
    },
}


@tool
def step(i: int) -> str:
    """One step of the work."""
    return RESULT


class Sample:
    """Process time at the start of each iteration, and each request's size."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.sizes: list[int] = []

    def per_iteration(self) -> list[float]:
        return [b - a for a, b in zip(self.starts, self.starts[1:], strict=False)]


async def tether_loop(base_url: str, rounds: int, compact: bool = False) -> Sample:
    sample = Sample()

    async def sized(request: httpx.Request) -> None:
        if b'"tools":' in request.content:  # a loop iteration's, not a compaction's summary
            sample.sizes.append(len(request.content))

    client = httpx.AsyncClient(event_hooks={"request": [sized]})
    transport = OpenAIChatTransport(
        "fake", base_url=base_url, api_key="k", stream=False, client=client
    )
    policy = Compaction(max_tokens=COMPACT_AT) if compact else None
    agent = Agent(SYSTEM, transport, tools=[step], max_iterations=rounds + 1, context_policy=policy)
    async for event in agent.run_stream("Do the work."):
        if type(event) is IterationStart:
            sample.starts.append(time.process_time())
    sample.starts.append(time.process_time())
    await client.aclose()
    return sample


async def hand_written_loop(base_url: str, rounds: int) -> Sample:
    """The loop written by hand: one list of wire messages, appended to, posted each time."""
    sample = Sample()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Do the work."},
    ]
    headers = {"authorization": "Bearer k", "content-type": "application/json"}
    async with httpx.AsyncClient() as client:
        for _ in range(rounds + 1):
            sample.starts.append(time.process_time())
            body = json.dumps({"model": "fake", "messages": messages, "tools": [TOOL]}).encode()
            sample.sizes.append(len(body))
            response = await client.post(
                f"{base_url}/chat/completions", content=body, headers=headers
            )
            message = response.json()["choices"][0]["message"]
            messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                break
            for call in calls:
                args = json.loads(call["function"]["arguments"])
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": step_text(args)}
                )
    sample.starts.append(time.process_time())
    return sample


def step_text(args: dict[str, Any]) -> str:
    return RESULT if isinstance(args.get("i"), int) else "bad arguments"


def around(values: list[float], at: int, span: int = 5) -> float:
    """The median of the values of iterations ``at - span + 1`` to ``at`` (1-based)."""
    window = values[max(at - span, 0) : at]
    return statistics.median(window) if window else float("nan")


async def measure(base_url: str, rounds: int, reps: int) -> dict[str, list[Sample]]:
    """Each loop ``reps`` times, alternating which goes first."""
    loops = {
        "hand-written": hand_written_loop,
        "tether": tether_loop,
        "tether+compact": lambda url, n: tether_loop(url, n, compact=True),
    }
    runs: dict[str, list[Sample]] = {name: [] for name in loops}
    for rep in range(reps):
        names = list(loops)[rep % 3 :] + list(loops)[: rep % 3]  # each goes first in turn
        for name in names:
            runs[name].append(await loops[name](base_url, rounds))
    return runs


def report(runs: dict[str, list[Sample]], rounds: int, reps: int) -> None:
    points = [p for p in (10, 100, 300) if p <= rounds] or [rounds]
    print(f"{rounds} iterations, {reps} repetition(s); client CPU ms per iteration (median of 5)")
    print("and KB sent per request, at iterations", ", ".join(map(str, points)))
    heads = "".join(f"{'ms @' + str(p):>10}" for p in points)
    sizes = "".join(f"{'KB @' + str(p):>10}" for p in points)
    print(f"{'loop':16}{heads}{sizes}")
    for name, samples in runs.items():
        cells = [
            statistics.median(around(s.per_iteration(), p) for s in samples) * 1e3 for p in points
        ]
        sent = [
            statistics.median(s.sizes[min(p, len(s.sizes)) - 1] for s in samples) for p in points
        ]
        print(
            f"{name:16}"
            + "".join(f"{c:10.2f}" for c in cells)
            + "".join(f"{b / 1024:10.1f}" for b in sent)
        )


LOCAL_SYSTEM = (
    "You work in steps. Call the step_local tool with i set to the number the last result "
    "asks for; when a result says the work is done, answer 'done'."
)


@tool
def step_local(i: int) -> str:
    """Do step number i of the work."""
    return (
        f"Step {i} is done. "
        + "Log line. " * 40
        + f"Next: call the step_local tool with i={i + 1}."
    )


async def local_loop(rounds: int) -> None:
    """The loop on the real local model, each iteration's prompt tokens split into what the
    server read from its cache and what it evaluated, beside what was new since the last."""
    from tether.local import LocalModel  # the local extra: only here

    async with LocalModel() as local:
        transport = local.chat_transport(temperature=0, seed=1, max_tokens=60)
        agent = Agent(LOCAL_SYSTEM, transport, tools=[step_local], max_iterations=rounds)
        print(f"{'iter':>5}{'prompt':>9}{'cached':>9}{'evaluated':>11}{'new':>7}{'eval/new':>10}")
        last = None
        async for event in agent.run_stream("Start with step 1."):
            if type(event) is IterationEnd:
                usage = event.usage
                evaluated = usage.input_tokens - usage.cache_read_tokens
                new = usage.input_tokens - last if last is not None else usage.input_tokens
                ratio = f"{evaluated / new:10.2f}" if new > 0 else f"{'-':>10}"
                print(
                    f"{event.iteration:5}{usage.input_tokens:9}{usage.cache_read_tokens:9}"
                    f"{evaluated:11}{new:7}{ratio}"
                )
                last = usage.input_tokens + usage.output_tokens
        await transport.aclose()


def main(rounds: int, reps: int) -> None:
    server = subprocess.Popen(
        [sys.executable, str(HERE / "fake_openai.py"), "--rounds", str(rounds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().split()[1])
        runs = asyncio.run(measure(f"http://127.0.0.1:{port}/v1", rounds, reps))
    finally:
        server.terminate()
        server.wait()
    report(runs, rounds, reps)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--local", type=int, metavar="N", help="N rounds on the local model")
    args = parser.parse_args()
    if args.local:
        asyncio.run(local_loop(args.local))
    else:
        main(40 if args.quick else args.rounds, 1 if args.quick else 3)
