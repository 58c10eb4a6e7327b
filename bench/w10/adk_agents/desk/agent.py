"""The offline desk of W10 for Google ADK's API server (BENCHMARKS.md, W10).

The same tree as agentflow's `agentweave_server::demo::desk()`: `triage` with sub-agents `refund` and
`complaint`, each an LlmAgent on an offline model. For the benchmark's message (`Hi`) triage
answers itself, streaming `Hello! I can help with refunds and complaints.` word by word (8
partial responses, then the whole text), as agentflow's scripted model does. Nothing reaches
the network.
"""
from google.adk.agents import LlmAgent
from google.adk.models._capabilities import LlmCapabilities
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types

ANSWER = "Hello! I can help with refunds and complaints."


def _text(text, partial):
    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        partial=partial,
        turn_complete=not partial,
    )


class OfflineModel(BaseLlm):
    """Answers every request with `reply`, word by word when asked to stream."""

    reply: str = ANSWER

    @property
    def capabilities(self):
        return LlmCapabilities()

    async def generate_content_async(self, llm_request, stream=False):
        if stream:
            words = self.reply.split(" ")
            for i, word in enumerate(words):
                yield _text(word if i == 0 else " " + word, True)
        yield _text(self.reply, False)


def _agent(name, description, sub_agents=()):
    return LlmAgent(
        name=name,
        model=OfflineModel(model="offline"),
        description=description,
        instruction=f"You are {name}.",
        sub_agents=list(sub_agents),
    )


root_agent = _agent(
    "triage",
    "The front desk: finds out what the customer needs.",
    [
        _agent("refund", "Refunds orders once a human approves."),
        _agent("complaint", "Takes complaints about broken or missing goods."),
    ],
)
