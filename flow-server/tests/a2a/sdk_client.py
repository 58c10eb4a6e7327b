"""The official A2A Python SDK's client (a2a-sdk 1.x) against agentflow's A2A endpoint.

Usage: python sdk_client.py BASE_URL TOKEN HOOK_URL

BASE_URL serves the customer-service desk at /a2a/desk and a flow that works until it is
cancelled at /a2a/slow. Fetches the desk's card, sends a message, streams a task to the refund
approval (input-required), answers it, cancels a slow task, cancels a task waiting for input
(a later message in its context starts a new task; a webhook set on it with the push-notification
config methods, HOOK_URL, is told), subscribes to a task waiting for input and answers its
approval in text ("approve"; other text is refused), lists tasks (and is refused page sizes out of
1-100), and asks for a task that does not exist. Prints one line per check and "A2A SDK CLIENT OK" at the end; exits non-zero on the
first check that fails.
"""

import asyncio
import sys

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.client.errors import A2AClientError
from a2a.helpers.proto_helpers import (
    get_artifact_text,
    get_message_text,
    new_data_message,
    new_text_message,
)
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from google.protobuf import json_format
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError


def check(what, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + what + (f": {detail}" if detail else ""), flush=True)
    if not ok:
        sys.exit(1)


def run_path(message):
    meta = message.metadata.fields.get("agentflow")
    if meta is None:
        return None
    return meta.struct_value.fields["runPath"].string_value


async def collect(client, message):
    """Every StreamResponse of one send, in order."""
    events = []
    async for event in client.send_message(SendMessageRequest(message=message)):
        events.append(event)
    return events


async def main(base, token, hook):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    desk_url = f"{base}/a2a/desk"

    # The card.
    card = await A2ACardResolver(http, desk_url).get_agent_card()
    check("card: name", card.name == "desk", card.name)
    check("card: skills are the desk's agents", [s.id for s in card.skills] == ["triage", "refund", "complaint"])
    check("card: streaming", card.capabilities.streaming)
    check("card: push notifications", card.capabilities.push_notifications)
    check("card: bearer scheme", card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer")
    check("card: JSON-RPC 1.0 interface", card.supported_interfaces[0].protocol_binding == "JSONRPC"
          and card.supported_interfaces[0].protocol_version == "1.0")

    # Without the token the endpoint refuses.
    anonymous = await create_client(card, client_config=ClientConfig(streaming=False, httpx_client=httpx.AsyncClient(timeout=30)))
    try:
        await collect(anonymous, new_text_message("hello", role=Role.ROLE_USER))
        check("no token: refused", False)
    except A2AClientError as e:
        check("no token: refused", "401" in str(e), str(e)[:80])

    # A plain send: the task completes with the answer as an artifact.
    plain = await create_client(card, client_config=ClientConfig(streaming=False, httpx_client=http))
    events = await collect(plain, new_text_message("Hello there", role=Role.ROLE_USER))
    task = events[-1].task
    check("send: completed", task.status.state == TaskState.TASK_STATE_COMPLETED, TaskState.Name(task.status.state))
    check("send: answer artifact", get_artifact_text(task.artifacts[0]).startswith("Hello! I can help"),
          get_artifact_text(task.artifacts[0]))

    # A stream: triage transfers to refund, which stops for approval.
    streaming = await create_client(card, client_config=ClientConfig(streaming=True, httpx_client=http))
    events = await collect(streaming, new_text_message("I want a refund for my kettle", role=Role.ROLE_USER))
    check("stream: starts with the task", events[0].HasField("task"))
    task_id = events[0].task.id
    context_id = events[0].task.context_id
    paths = [run_path(e.status_update.status.message) for e in events
             if e.HasField("status_update") and e.status_update.status.HasField("message")]
    check("stream: refund speaks at triage/refund", "triage/refund" in paths, str(paths))
    transfers = [e.status_update.metadata.fields["agentflow"].struct_value.fields["transfer"].string_value
                 for e in events if e.HasField("status_update") and "agentflow" in e.status_update.metadata.fields
                 and "transfer" in e.status_update.metadata.fields["agentflow"].struct_value.fields]
    check("stream: the transfer is told", transfers == ["refund"], str(transfers))
    last = events[-1].status_update.status
    check("stream: input-required", last.state == TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.Name(last.state))
    question = get_message_text(last.message)
    check("stream: the approval question", question == "Approve a refund of 39.00 EUR for order 42?", question)

    got = await streaming.get_task(GetTaskRequest(id=task_id))
    check("get: input-required", got.status.state == TaskState.TASK_STATE_INPUT_REQUIRED)

    # The answer resumes the same task.
    answer = new_data_message({"approve": True}, context_id=context_id, task_id=task_id, role=Role.ROLE_USER)
    events = await collect(streaming, answer)
    check("answer: same task", events[0].task.id == task_id)
    last = events[-1].status_update.status
    check("answer: completed", last.state == TaskState.TASK_STATE_COMPLETED, TaskState.Name(last.state))
    artifacts = [get_artifact_text(e.artifact_update.artifact) for e in events if e.HasField("artifact_update")]
    check("answer: the refund is paid", artifacts == ["Done: 39 EUR for order 42 are on their way back to you."], str(artifacts))
    got = await streaming.get_task(GetTaskRequest(id=task_id))
    check("get: completed", got.status.state == TaskState.TASK_STATE_COMPLETED)
    check("get: history has both user messages", sum(1 for m in got.history if m.role == Role.ROLE_USER) == 2)

    # SubscribeToTask on a task waiting for input: the task as it is, then its later states once
    # answered. The answer is text, by the documented rule for approvals: the input-required
    # message states the answer's schema and the texts taken; other text is refused, clearly.
    events = await collect(streaming, new_text_message("I want a refund for my kettle", role=Role.ROLE_USER))
    waiting = events[-1].status_update
    check("subscribe: input-required", waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED)
    asked = json_format.MessageToDict(waiting.status.message)
    entry = asked["parts"][1]["data"]["interrupts"][0]
    check("text approval: the answer's schema is stated", entry["answer"]["schema"]["required"] == ["approve"], str(entry))
    check("text approval: the texts taken are stated", "approve" in entry["answer"]["text"]["approve"]
          and "deny" in entry["answer"]["text"]["deny"], str(entry["answer"]))
    subscription = streaming.subscribe(SubscribeToTaskRequest(id=waiting.task_id))
    first = await subscription.__anext__()
    check("subscribe: the waiting task first", first.HasField("task")
          and first.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, str(first)[:120])
    try:
        await collect(plain, new_text_message("yes, approve it", context_id=waiting.context_id,
                                              task_id=waiting.task_id, role=Role.ROLE_USER))
        check("text approval: other text is refused", False)
    except Exception as e:
        check("text approval: other text is refused, naming the rule", '"approve" or "deny"' in str(e),
              f"{type(e).__name__}: {str(e)[:160]}")
    got = await streaming.get_task(GetTaskRequest(id=waiting.task_id))
    check("text approval: the task still waits", got.status.state == TaskState.TASK_STATE_INPUT_REQUIRED)
    events = await collect(plain, new_text_message("approve", context_id=waiting.context_id,
                                                   task_id=waiting.task_id, role=Role.ROLE_USER))
    done = events[-1].task
    check("text approval: 'approve' completes the task", done.status.state == TaskState.TASK_STATE_COMPLETED,
          TaskState.Name(done.status.state))
    check("text approval: the refund is paid", get_artifact_text(done.artifacts[0]).startswith("Done: 39 EUR"))
    later = [e async for e in subscription]
    states = [TaskState.Name(e.status_update.status.state) for e in later if e.HasField("status_update")]
    check("subscribe: the later states, to completed", states and states[0] == "TASK_STATE_WORKING"
          and states[-1] == "TASK_STATE_COMPLETED", str(states))

    # A task that works until cancelled.
    slow = await create_client(f"{base}/a2a/slow", client_config=ClientConfig(streaming=True, httpx_client=http))
    stream = slow.send_message(SendMessageRequest(message=new_text_message("take your time", role=Role.ROLE_USER)))
    slow_id = None
    async for event in stream:
        if event.HasField("task"):
            slow_id = event.task.id
        if event.HasField("status_update") and event.status_update.status.HasField("message"):
            break
    check("slow: working", slow_id is not None)
    cancelled = await slow.cancel_task(CancelTaskRequest(id=slow_id))
    check("cancel: canceled", cancelled.status.state == TaskState.TASK_STATE_CANCELED, TaskState.Name(cancelled.status.state))
    rest = [e async for e in stream]
    check("cancel: the stream ends canceled", rest and rest[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED)
    got = await slow.get_task(GetTaskRequest(id=slow_id))
    check("get: canceled", got.status.state == TaskState.TASK_STATE_CANCELED)

    # A task waiting for input, cancelled: the approval is dropped, the next message starts afresh.
    events = await collect(streaming, new_text_message("I want a refund for my kettle", role=Role.ROLE_USER))
    waiting = events[-1].status_update
    check("waiting: input-required", waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED)
    config = await streaming.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=waiting.task_id, url=hook, token="push-token-1"))
    check("push: config set, named by the server", config.id != "" and config.url == hook, config.id)
    got_config = await streaming.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=waiting.task_id, id=config.id))
    check("push: config read back", got_config.url == hook and got_config.token == "push-token-1")
    spare = await streaming.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=waiting.task_id, id="spare", url=hook))
    listed_configs = await streaming.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=waiting.task_id))
    check("push: configs listed", sorted(c.id for c in listed_configs.configs) == sorted([config.id, "spare"]))
    await streaming.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=waiting.task_id, id=spare.id))
    listed_configs = await streaming.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=waiting.task_id))
    check("push: config deleted", [c.id for c in listed_configs.configs] == [config.id])
    try:
        await streaming.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=waiting.task_id, url="file:///etc/passwd"))
        check("push: a URL that is not http(s) is refused", False)
    except Exception as e:
        check("push: a URL that is not http(s) is refused", "http" in str(e), str(e)[:100])
    cancelled = await streaming.cancel_task(CancelTaskRequest(id=waiting.task_id))
    check("cancel waiting: canceled", cancelled.status.state == TaskState.TASK_STATE_CANCELED, TaskState.Name(cancelled.status.state))
    got = await streaming.get_task(GetTaskRequest(id=waiting.task_id))
    check("cancel waiting: get says canceled", got.status.state == TaskState.TASK_STATE_CANCELED, TaskState.Name(got.status.state))
    try:
        await streaming.cancel_task(CancelTaskRequest(id=waiting.task_id))
        check("cancel waiting: twice is refused", False)
    except TaskNotCancelableError as e:
        check("cancel waiting: twice is refused", "cannot be cancelled" in str(e), str(e)[:120])
    # The old task takes no answer; a message in the context starts a new task.
    late = new_data_message({"approve": True}, context_id=waiting.context_id, task_id=waiting.task_id, role=Role.ROLE_USER)
    try:
        await collect(streaming, late)
        check("cancel waiting: the old task takes no answer", False)
    except Exception as e:  # the SDK's error for JSON-RPC's invalid request
        check("cancel waiting: the old task takes no answer", "has ended" in str(e), f"{type(e).__name__}: {str(e)[:120]}")
    events = await collect(streaming, new_text_message("Hello there", context_id=waiting.context_id, role=Role.ROLE_USER))
    fresh = events[0].task
    last = events[-1].status_update.status
    check("cancel waiting: a new task in the context", fresh.id != waiting.task_id and fresh.context_id == waiting.context_id, fresh.id)
    check("cancel waiting: the new task completes", last.state == TaskState.TASK_STATE_COMPLETED, TaskState.Name(last.state))

    # Listing tasks: a context's, newest first; the flow's, filtered by state.
    listed = await streaming.list_tasks(ListTasksRequest(context_id=waiting.context_id))
    check("list: the context's two tasks, newest first", [t.id for t in listed.tasks] == [fresh.id, waiting.task_id],
          str([t.id for t in listed.tasks]))
    check("list: their states", [t.status.state for t in listed.tasks] == [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED])
    canceled = await streaming.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_CANCELED))
    check("list: the canceled ones", [t.id for t in canceled.tasks] == [waiting.task_id], str([t.id for t in canceled.tasks]))
    paged = await streaming.list_tasks(ListTasksRequest(page_size=1))
    check("list: by pages", len(paged.tasks) == 1 and paged.next_page_token != "" and paged.total_size >= 4,
          f"{len(paged.tasks)} {paged.next_page_token!r} {paged.total_size}")
    rest = await streaming.list_tasks(ListTasksRequest(page_size=1, page_token=paged.next_page_token))
    check("list: the next page", len(rest.tasks) == 1 and rest.tasks[0].id != paged.tasks[0].id)

    # ListTasks as the spec bounds it: 50 a page by default, 1 to 100, refused outside.
    default_page = await streaming.list_tasks(ListTasksRequest())
    check("list: the default page size is 50", default_page.page_size == 50, str(default_page.page_size))
    for size in (0, -1, 150):
        try:
            await streaming.list_tasks(ListTasksRequest(page_size=size))
            check(f"list: pageSize {size} is refused", False)
        except Exception as e:
            check(f"list: pageSize {size} is refused", "pageSize" in str(e), f"{type(e).__name__}: {str(e)[:120]}")

    # Errors are A2A's typed errors.
    try:
        await streaming.get_task(GetTaskRequest(id="no-such-context.3"))
        check("unknown task: TaskNotFoundError", False)
    except TaskNotFoundError:
        check("unknown task: TaskNotFoundError", True)

    print("A2A SDK CLIENT OK", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]))
