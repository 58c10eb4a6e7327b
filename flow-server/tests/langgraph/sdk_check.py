"""Talks to agentflow's server with the official `langgraph-sdk` client only, unchanged.

Run by flow-server/tests/it/langgraph_sdk.rs against a real server on a loopback port:
AGENTFLOW_LG_URL (the server's /v1 base) and AGENTFLOW_LG_TOKEN (its bearer token). The served
flows: `desk` (the demo customer-service desk, whose refund waits for an approval) and `slow`
(its tool never finishes, so its runs stay running until cancelled). Exits non-zero on the first
mismatch, saying what it expected.
"""

import asyncio
import os
import sys

import httpx
from langgraph_sdk import get_client


def check(condition, what):
    if not condition:
        print(f"MISMATCH: {what}", file=sys.stderr)
        sys.exit(1)


async def collect(parts):
    return [part async for part in parts]


async def wait_running(client, thread_id, run_id):
    for _ in range(500):
        run = await client.runs.get(thread_id, run_id)
        if run["status"] == "running":
            return run
        await asyncio.sleep(0.01)
    check(False, f"run {run_id} never reached running")


async def main():
    client = get_client(
        url=os.environ["AGENTFLOW_LG_URL"],
        api_key=None,
        headers={"Authorization": f"Bearer {os.environ['AGENTFLOW_LG_TOKEN']}"},
    )

    assistants = await client.assistants.search()
    check({a["assistant_id"] for a in assistants} >= {"desk", "slow"}, f"assistants: {assistants}")

    # A thread, a streamed run in `messages` and `updates` modes meeting the refund's interrupt.
    thread = await client.threads.create(metadata={"user": "ada"})
    tid = thread["thread_id"]
    check(thread["metadata"] == {"user": "ada"}, f"thread metadata: {thread}")
    created = []
    parts = await collect(
        client.runs.stream(
            tid,
            "desk",
            input={"messages": [{"role": "user", "content": "I want a refund for order 42"}]},
            stream_mode=["messages", "updates"],
            on_run_created=created.append,
        )
    )
    events = [p.event for p in parts]
    check(events[0] == "metadata" and "run_id" in parts[0].data, f"first event: {parts[0]}")
    # The client learns the run's ids from the response's Content-Location.
    check(len(created) == 1, f"on_run_created called once: {created}")
    check(created[0]["thread_id"] == tid, f"created run's thread: {created}")
    check(created[0]["run_id"] == parts[0].data["run_id"], f"created run's id: {created}")
    check(events[-1] == "end", f"last event: {events}")
    check("messages" in events, f"messages events: {events}")
    updates = [p.data for p in parts if p.event == "updates"]
    interrupts = [u["__interrupt__"] for u in updates if "__interrupt__" in u]
    check(len(interrupts) == 1, f"one interrupt in the updates: {updates}")
    check(any("refund" in u for u in updates), f"the refund agent's update: {updates}")

    state = await client.threads.get_state(tid)
    check(len(state["interrupts"]) == 1, f"the state's interrupts: {state}")
    check(state["next"] == ["refund"], f"the state's next: {state['next']}")
    thread = await client.threads.get(tid)
    check(thread["status"] == "interrupted", f"thread status: {thread['status']}")

    # Resumed with a command.
    parts = await collect(
        client.runs.stream(tid, "desk", command={"resume": {"approve": True}}, stream_mode="values")
    )
    check(parts[-1].event == "end", f"resume ends with end: {[p.event for p in parts]}")
    values = [p.data for p in parts if p.event == "values"][-1]
    last = values["messages"][-1]
    check(last["type"] == "ai" and "39 EUR" in last["content"], f"the answer: {last}")
    state = await client.threads.get_state(tid)
    check(state["interrupts"] == [] and state["next"] == [], f"nothing waits: {state}")
    history = await client.threads.get_history(tid)
    check(len(history) >= 1, f"history: {history}")

    # A background run, its stream joined, its values joined.
    t2 = (await client.threads.create())["thread_id"]
    run = await client.runs.create(
        t2, "desk", input={"messages": [{"role": "user", "content": "my kettle arrived broken"}]}
    )
    check(run["status"] in ("pending", "running", "success"), f"created run: {run}")
    joined = await collect(client.runs.join_stream(t2, run["run_id"], stream_mode="updates"))
    check(joined[0].event == "metadata" and joined[-1].event == "end", f"joined: {joined}")
    values = await client.runs.join(t2, run["run_id"])
    check(values["messages"][0]["content"] == "my kettle arrived broken", f"join: {values}")
    waited = await client.runs.wait(
        t2, "desk", input={"messages": [{"role": "user", "content": "hello"}]}
    )
    check(len(waited["messages"]) > len(values["messages"]), f"wait: {waited}")
    runs = await client.runs.list(t2)
    check([r["status"] for r in runs] == ["success", "success"], f"runs: {runs}")

    # Cancel a running run.
    t3 = (await client.threads.create())["thread_id"]
    slow = await client.runs.create(
        t3, "slow", input={"messages": [{"role": "user", "content": "take your time"}]}
    )
    await wait_running(client, t3, slow["run_id"])
    cancelled = await client.runs.cancel(t3, slow["run_id"], wait=True, action="rollback")
    check(cancelled["status"] == "interrupted", f"cancelled: {cancelled}")
    try:
        await client.runs.cancel(t3, slow["run_id"])
        check(False, "a second cancel must be refused")
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 409, f"second cancel: {e.response.status_code}")

    # multitask_strategy: reject refuses, rollback replaces the running run.
    t4 = (await client.threads.create())["thread_id"]
    first = await client.runs.create(
        t4, "slow", input={"messages": [{"role": "user", "content": "one"}]}
    )
    await wait_running(client, t4, first["run_id"])
    try:
        await client.runs.create(
            t4,
            "slow",
            input={"messages": [{"role": "user", "content": "two"}]},
            multitask_strategy="reject",
        )
        check(False, "reject must refuse the second run")
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 409, f"reject: {e.response.status_code}")
    second = await client.runs.create(
        t4,
        "slow",
        input={"messages": [{"role": "user", "content": "three"}]},
        multitask_strategy="rollback",
    )
    first_after = await client.runs.join(t4, first["run_id"])
    check(isinstance(first_after, dict), f"first joined: {first_after}")
    check((await client.runs.get(t4, first["run_id"]))["status"] == "interrupted", "first rolled back")
    await wait_running(client, t4, second["run_id"])
    await client.runs.cancel(t4, second["run_id"], wait=True, action="rollback")
    try:
        await client.runs.create(
            t4, "slow", input={"messages": [{"role": "user", "content": "x"}]},
            multitask_strategy="sometimes",
        )
        check(False, "an unknown strategy must be refused")
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 400, f"unknown strategy: {e.response.status_code}")

    print("langgraph-sdk: all checks passed")


asyncio.run(main())
