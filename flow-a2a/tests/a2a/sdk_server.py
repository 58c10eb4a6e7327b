"""A billing agent served by the official A2A Python SDK (a2a-sdk 1.x), for agentflow's tests.

Usage: python sdk_server.py PORT

Serves on 127.0.0.1:PORT (card at /.well-known/agent-card.json, JSON-RPC at /). Scripted, no
model: a new task says it is billing, then what it read (the message's text parts, joined by
" | ": the earlier conversation a client sends with its request), then asks which email the
invoice goes to (input-required); the answer completes the task with the artifact "Invoice sent
to ANSWER.".
"""

import sys

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    TaskState,
)
from starlette.applications import Starlette


class Billing(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            email = context.get_user_input().strip()
            await updater.add_artifact([Part(text=f"Invoice sent to {email}.")], name="answer")
            await updater.complete()
            return
        await updater.start_work(updater.new_agent_message([Part(text="Billing here: I will send the invoice.")]))
        read = " | ".join(p.text for p in context.message.parts if p.text)
        await updater.update_status(
            TaskState.TASK_STATE_WORKING, message=updater.new_agent_message([Part(text=f"I read: {read}")])
        )
        await updater.requires_input(updater.new_agent_message([Part(text="Which email should the invoice go to?")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def main(port: int) -> None:
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="billing",
        description="Sends invoices.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="invoices", name="invoices", description="Sends an invoice by email.", tags=["billing"])],
    )
    handler = DefaultRequestHandler(agent_executor=Billing(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]))
