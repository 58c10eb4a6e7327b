"""Talks to agentflow's server with the official `langgraph-sdk` client only, unchanged.

Run by flow-server/tests/it/langgraph_sdk.rs against a real server on a loopback port:
AGENTFLOW_LG_URL (the server's /v1 base), AGENTFLOW_LG_QUEUE_URL (another server's, with a run
queue: the crons) and AGENTFLOW_LG_TOKEN (their bearer token). The served
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
    # `messages` as the reference sends it: metadata once per message, then the message whole.
    check("messages/metadata" in events and "messages/complete" in events, f"messages events: {events}")
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
    # One state per checkpoint: the interrupt's and the resume's.
    history = await client.threads.get_history(tid)
    check(len(history) >= 2, f"history after an interrupt and a resume: {len(history)} states")
    check(history[0]["interrupts"] == [] and len(history[1]["interrupts"]) == 1,
          f"newest first, the interrupted state second: {[h['interrupts'] for h in history]}")

    # Every stream mode the SDK offers, each with its events; subgraphs name the sub-agents'.
    modes = {
        "values": "values", "updates": "updates", "messages": "messages/complete",
        "messages-tuple": "messages", "events": "events", "debug": "debug",
        "tasks": "tasks", "checkpoints": "checkpoints",
    }
    for mode, event in modes.items():
        t = (await client.threads.create())["thread_id"]
        parts = await collect(client.runs.stream(
            t, "desk", input={"messages": [{"role": "user", "content": "hello"}]}, stream_mode=mode))
        names = [p.event for p in parts]
        check(event in names and names[0] == "metadata" and names[-1] == "end", f"mode {mode}: {names}")
    t = (await client.threads.create())["thread_id"]
    parts = await collect(client.runs.stream(
        t, "chatty", input={"messages": [{"role": "user", "content": "hi"}]}, stream_mode=["custom", "messages"]))
    custom = [p.data for p in parts if p.event == "custom"]
    check(custom == [{"progress": 50}], f"custom: {custom}")
    partial = [p.data[0]["content"] for p in parts if p.event == "messages/partial"]
    check(partial == ["Hel", "Hello!"], f"messages/partial: {partial}")
    t = (await client.threads.create())["thread_id"]
    parts = await collect(client.runs.stream(
        t, "desk", input={"messages": [{"role": "user", "content": "I want a refund"}]},
        stream_mode="updates", stream_subgraphs=True))
    names = {p.event for p in parts}
    check("updates|refund" in names, f"subgraphs: {names}")
    try:
        await collect(client.runs.stream(t, "desk", input={"messages": [{"role": "user", "content": "x"}]},
                                         stream_mode="telepathy"))
        check(False, "an unknown stream mode must be refused")
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 422, f"unknown stream mode: {e.response.status_code}")

    # New input on a thread waiting at an interrupt starts a new run (the interrupt is dropped).
    t = (await client.threads.create())["thread_id"]
    asked = await client.runs.wait(t, "desk", input={"messages": [{"role": "user", "content": "I want a refund"}]})
    check("__interrupt__" in asked, f"waits: {asked}")
    fresh = await client.runs.wait(t, "desk", input={"messages": [{"role": "user", "content": "hello instead"}]})
    check("__interrupt__" not in fresh and fresh["messages"][-1]["content"].startswith("Hello!"), f"new run: {fresh}")
    # ... and so does `interrupt` while the thread waits at the approval.
    asked = await client.runs.wait(t, "desk", input={"messages": [{"role": "user", "content": "I want a refund"}]})
    check("__interrupt__" in asked, f"waits again: {asked}")
    run = await client.runs.create(t, "desk", input={"messages": [{"role": "user", "content": "hello"}]},
                                   multitask_strategy="interrupt")
    await client.runs.join(t, run["run_id"])
    got = await client.runs.get(t, run["run_id"])
    check(got["status"] == "success" and got["multitask_strategy"] == "interrupt", f"interrupt at approval: {got}")

    # update_state, and search.
    await client.threads.update_state(t, {"topic": "refunds"})
    state = await client.threads.get_state(t)
    check(state["values"].get("topic") == "refunds", f"updated values: {state['values'].keys()}")
    try:
        await client.threads.update_state(t, {"messages": [{"role": "user", "content": "x"}]})
        check(False, "an update of messages must be refused")
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 422, f"update of messages: {e.response.status_code}")
    found = await client.threads.search(metadata={"user": "ada"})
    check([f["thread_id"] for f in found] == [tid], f"search by metadata: {found}")
    found = await client.threads.search(values={"topic": "refunds"})
    check([f["thread_id"] for f in found] == [t], f"search by values: {found}")

    # assistants.get_graph / get_schemas, threads.copy.
    graph = await client.assistants.get_graph("desk")
    check([n["id"] for n in graph["nodes"]] == ["__start__", "triage", "refund", "complaint", "__end__"],
          f"graph: {graph['nodes']}")
    schemas = await client.assistants.get_schemas("desk")
    check(schemas["input_schema"]["required"] == ["messages"], f"schemas: {schemas}")
    copy = await client.threads.copy(t)
    check(copy["thread_id"] != t, f"copy: {copy}")
    copied = await client.threads.get_state(copy["thread_id"])
    contents = lambda s: [(m["type"], m["content"]) for m in s["values"]["messages"]]
    check(contents(copied) == contents(state), "the copy has the thread's messages")

    # A webhook is called when the run ends (the test's receiver checks it), signed.
    hook = os.environ.get("AGENTFLOW_LG_HOOK")
    if hook:
        t = (await client.threads.create())["thread_id"]
        run = await client.runs.create(t, "desk", input={"messages": [{"role": "user", "content": "hello"}]},
                                       webhook=hook)
        await client.runs.join(t, run["run_id"])
        print(f"webhook run: {run['run_id']}")

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
    check(second["multitask_strategy"] == "rollback", f"the second run's strategy: {second}")
    # Rolled back is deleted, as the reference does.
    try:
        await client.runs.get(t4, first["run_id"])
        check(False, "the rolled-back run must be gone")
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 404, f"rolled-back run: {e.response.status_code}")
    check((await client.runs.get(t4, second["run_id"]))["multitask_strategy"] == "rollback", "GET reports rollback")
    await wait_running(client, t4, second["run_id"])
    # enqueue: the new run waits behind the running one.
    third = await client.runs.create(
        t4, "slow", input={"messages": [{"role": "user", "content": "four"}]}, multitask_strategy="enqueue")
    check(third["status"] == "pending" and third["multitask_strategy"] == "enqueue", f"enqueued: {third}")
    queued = await client.runs.cancel(t4, third["run_id"], wait=True)
    check(queued["status"] == "interrupted", f"the queued run cancelled before it ran: {queued}")
    await client.runs.cancel(t4, second["run_id"], wait=True, action="rollback")
    try:
        await client.runs.create(
            t4, "slow", input={"messages": [{"role": "user", "content": "x"}]},
            multitask_strategy="sometimes",
        )
        check(False, "an unknown strategy must be refused")
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 400, f"unknown strategy: {e.response.status_code}")

    # The store: put, get, search, list namespaces and delete items of long-term memory.
    await client.store.put_item(
        ["memories", "devices"], key="printer", value={"model": "X200", "note": "a laser printer"}
    )
    await client.store.put_item(["memories", "prefs"], key="tone", value={"text": "short answers"}, ttl=60)
    await client.store.put_item(["notes"], key="quiet", value={"text": "not searched"}, index=False)
    item = await client.store.get_item(["memories", "devices"], key="printer")
    check(item["namespace"] == ["memories", "devices"] and item["key"] == "printer", f"get_item: {item}")
    check(item["value"] == {"model": "X200", "note": "a laser printer"}, f"get_item's value: {item}")
    check(item["created_at"].endswith("Z") and item["updated_at"].endswith("Z"), f"get_item's times: {item}")
    found = await client.store.search_items(["memories"], query="laser printer", limit=5)
    check([i["key"] for i in found["items"]] == ["printer"], f"search_items by query: {found}")
    check(isinstance(found["items"][0].get("score"), float), f"search_items' score: {found}")
    listed = await client.store.search_items(["memories"], filter={"model": "X200"})
    check([i["key"] for i in listed["items"]] == ["printer"], f"search_items by filter: {listed}")
    quiet = await client.store.search_items([], query="searched")
    check(quiet["items"] == [], f"an item put with index=False is not searched: {quiet}")
    spaces = await client.store.list_namespaces()
    check(spaces["namespaces"] == [["memories", "devices"], ["memories", "prefs"], ["notes"]], f"list_namespaces: {spaces}")
    spaces = await client.store.list_namespaces(prefix=["memories"], max_depth=1)
    check(spaces["namespaces"] == [["memories"]], f"list_namespaces with max_depth: {spaces}")
    await client.store.delete_item(["memories", "devices"], key="printer")
    try:
        await client.store.get_item(["memories", "devices"], key="printer")
        check(False, "a deleted item must be gone")
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 404, f"deleted item: {e.response.status_code}")
    # The client refuses '.' in labels itself; the server refuses separators and look-alikes.
    for hostile in (["a/b", "x"], ["m\u0435mories"], ["memories"]):
        try:
            await client.store.put_item(hostile, key="k" if hostile != ["memories"] else "../k", value={})
            check(False, f"a hostile address must be refused: {hostile}")
        except httpx.HTTPStatusError as e:
            check(e.response.status_code == 400, f"hostile address {hostile}: {e.response.status_code}")

    # Crons, on a server with a run queue (its schedules live in the queue's store).
    queued = get_client(
        url=os.environ["AGENTFLOW_LG_QUEUE_URL"],
        api_key=None,
        headers={"Authorization": f"Bearer {os.environ['AGENTFLOW_LG_TOKEN']}"},
    )
    daily = await queued.crons.create(
        "desk",
        schedule="0 9 * * *",
        input={"messages": [{"role": "user", "content": "the daily report"}]},
        metadata={"kind": "report"},
    )
    check(daily["cron_id"] and daily["assistant_id"] == "desk", f"created cron: {daily}")
    check(daily["schedule"] == "0 9 * * *" and daily["enabled"] is True, f"created cron: {daily}")
    check(daily["thread_id"] is None and daily["metadata"] == {"kind": "report"}, f"created cron: {daily}")
    check(daily["next_run_date"].endswith("T09:00:00.000Z"), f"next run date: {daily}")
    t5 = (await queued.threads.create())["thread_id"]
    half_hourly = await queued.crons.create_for_thread(
        t5, "desk", schedule="*/30 * * * *",
        input={"messages": [{"role": "user", "content": "any news?"}]},
    )
    check(half_hourly["thread_id"] == t5, f"a thread's cron: {half_hourly}")
    ids = {daily["cron_id"], half_hourly["cron_id"]}
    found = await queued.crons.search(assistant_id="desk")
    check({c["cron_id"] for c in found} == ids, f"crons.search: {found}")
    found = await queued.crons.search(thread_id=t5)
    check([c["cron_id"] for c in found] == [half_hourly["cron_id"]], f"crons.search by thread: {found}")
    check(await queued.crons.count(assistant_id="desk") == 2, "crons.count")
    paused = await queued.crons.update(daily["cron_id"], enabled=False)
    check(paused["enabled"] is False and paused["next_run_date"] is None, f"a paused cron: {paused}")
    found = await queued.crons.search(enabled=True)
    check([c["cron_id"] for c in found] == [half_hourly["cron_id"]], f"enabled crons: {found}")
    for bad in ({"schedule": "61 * * * *"}, {"schedule": "0 9 * * *", "timezone": "America/New_York"}):
        try:
            await queued.crons.create("desk", input={"messages": [{"role": "user", "content": "x"}]}, **bad)
            check(False, f"a bad cron must be refused: {bad}")
        except httpx.HTTPStatusError as e:
            check(e.response.status_code == 400, f"bad cron {bad}: {e.response.status_code}")
    for cron_id in ids:
        await queued.crons.delete(cron_id)
    check(await queued.crons.count() == 0, "crons deleted")
    try:
        await queued.crons.delete(daily["cron_id"])
        check(False, "a deleted cron must be gone")
    except httpx.HTTPStatusError as e:
        check(e.response.status_code == 404, f"deleted cron: {e.response.status_code}")

    print("langgraph-sdk: all checks passed")


asyncio.run(main())
