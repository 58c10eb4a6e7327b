"""A scripted "model" for the LiteLLM proxy: deterministic answers, no weights, no network.

LiteLLM loads it through `custom_provider_map` in litellm.yaml beside this file. The proxy does
all of the protocol work (JSON bodies, server-sent events, tool-call deltas, errors); this file
only decides what the model "says", from the tools it is offered and the current turn of the
conversation: the messages from the customer's last message on (the framework's "For context:"
messages are not the customer's). "Not yet called" means "not called in this turn", so every
turn of a thread calls its tools again:

- offered `transfer_to_agent` before any tool call: transfer to `refund` when the customer's
  words mention a refund, to `complaint` when something is broken, if that agent is a legal
  target; offered no other tool, answer in one sentence;
- offered `lookup_order` in a task (`finish_task` offered too) with no number in the customer's
  words: ask for the order number (the next turn of the thread goes to the task);
- offered `lookup_order` and not yet called: look up each order number in the customer's words
  (42 if there is none), one call per number in one reply;
- offered `issue_refund` after a lookup: refund the price the lookup reported;
- offered `log_complaint` and not yet called: log the customer's words;
- offered `exit` after a tool call: exit with the last tool result;
- any other offered tool (a flow's own, not a built-in) not yet called: call it once, with an
  object of its required properties (as for JSON below);
- offered `finish_task` after a tool call: finish with an object of its schema's properties;
- otherwise: answer with text (after tool calls, "Done: <the last reply's tool results>"; after
  a delegated agent's result, "Done: <its result>"; else "You said: <the last user message>");
  asked for JSON matching a schema (`response_format` of type `json_schema`), answer with an
  object of its required properties: `true` for booleans, 42 for numbers, "order 42" for
  strings; but the first time the last user message contains "bad json", answer with text
  that is not JSON.

Streamed, text comes in pieces of four characters, and each tool call in three chunks (id and
name, then its arguments in two halves), the calls of one reply at their own `index`. A streamed
reply to a last user message containing "break off" fails after its third piece.
"""

import json
import re
import uuid
from collections.abc import Iterator

from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ChatCompletionMessageToolCall, Function, GenericStreamingChunk


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


# Tools the framework adds: never called by the generic rule for a flow's own tools.
_BUILTINS = {"transfer_to_agent", "exit", "finish_task", "read_tool_result"}


def _is_context(m: dict) -> bool:
    """Whether a user message is one the framework wrote (another agent's words, a result)."""
    return _text(m.get("content")).startswith("For context:")


def _turn(messages: list) -> list:
    """The current turn: the messages from the customer's last message on."""
    start = 0
    for i, m in enumerate(messages):
        if m.get("role") == "user" and not _is_context(m):
            start = i
    return messages[start:]


def _object_for(schema: dict) -> dict:
    """An object of a JSON schema's required properties (all of them if none is required)."""
    properties = schema.get("properties") or {}
    values = {"boolean": True, "number": 42, "integer": 42, "string": "order 42"}
    answer = {}
    for name in schema.get("required") or list(properties):
        kind = (properties.get(name) or {}).get("type")
        answer[name] = values.get(kind if isinstance(kind, str) else "string")
    return answer


def _decide(messages: list, tools: list) -> tuple[str, list[tuple[str, dict]]]:
    """What the model answers: its text and its tool calls (name, arguments)."""
    offered = {t["function"]["name"]: t["function"] for t in tools or [] if t.get("type") == "function"}
    turn = _turn(messages)
    called = []
    called_last = []
    results = []
    for m in turn:
        if m.get("role") == "assistant":
            called_last = [c["function"]["name"] for c in m.get("tool_calls") or []]
            called += called_last
        if m.get("role") == "tool":
            results.append(_text(m.get("content")))
    # The customer's words: the message that opened the turn.
    said = next((_text(m.get("content")) for m in turn if m.get("role") == "user"), "").lower()
    order_ids = [int(n) for n in re.findall(r"\b(\d+)\b", said)] or [42]
    order_id = order_ids[0]
    last = turn[-1] if turn else {}

    if last.get("role") == "user" and _is_context(last) and "transfer_to_agent" not in _text(last.get("content")):
        # A delegated agent's result came back (the framework's words, not a transfer's).
        return "Done: " + _text(last.get("content")).removeprefix("For context:").strip(), []
    if "transfer_to_agent" in offered and not called:
        targets = offered["transfer_to_agent"]["parameters"]["properties"]["agent_name"].get("enum", [])
        for word, target in (("refund", "refund"), ("broken", "complaint")):
            if word in said and target in targets:
                return "", [("transfer_to_agent", {"agent_name": target})]
        if set(offered) <= {"transfer_to_agent", "exit"}:
            return "Hello! We are open every day from 9 to 17, Sundays included.", []
    numbers = re.findall(r"\b(\d+)\b", said)
    if "lookup_order" in offered and "finish_task" in offered and not numbers and not called:
        # A task converses: it asks for what it needs over the turns of a thread.
        return "Of course. What is the order number?", []
    if "lookup_order" in offered and "lookup_order" not in called:
        return "", [("lookup_order", {"order_id": n}) for n in order_ids]
    if "issue_refund" in offered and "issue_refund" not in called and results:
        price = re.search(r"(\d+(?:\.\d+)?) EUR", results[-1])
        amount = float(price.group(1)) if price else 0.0
        return "", [("issue_refund", {"order_id": order_id, "amount_eur": amount})]
    if "log_complaint" in offered and "log_complaint" not in called:
        return "", [("log_complaint", {"summary": said.strip()[:200] or "no details"})]
    if "exit" in offered and "exit" not in called and results:
        return "", [("exit", {"final_result": f"Logged: {results[-1]}"})]
    known = {"lookup_order", "issue_refund", "log_complaint"}
    for name, function in offered.items():
        if name not in _BUILTINS | known and name not in called:
            return "", [(name, _object_for(function.get("parameters") or {}))]
    if "finish_task" in offered and "finish_task" not in called and results:
        return "", [("finish_task", _object_for(offered["finish_task"].get("parameters") or {}))]
    if results:
        return "Done: " + "; ".join(results[-len(called_last):] if called_last else results[-1:]), []
    return f"You said: {_last_user(messages)}", []


def _json_answer(messages: list, response_format) -> str | None:
    """An answer matching the requested JSON schema, if one was requested."""
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    if "bad json" in _last_user(messages) and not any(m.get("role") == "assistant" for m in messages):
        return "Sure, here it is: approved."
    schema = (response_format.get("json_schema") or {}).get("schema") or {}
    return json.dumps(_object_for(schema))


def _last_user(messages: list) -> str:
    return next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")


def _calls(calls: list[tuple[str, dict]]) -> list[tuple[str, str, str]]:
    return [(f"call_{uuid.uuid4().hex[:12]}", name, json.dumps(args)) for name, args in calls]


def _params(args, kwargs) -> dict:
    """`optional_params` (where the request's `tools` are), passed by name or by position."""
    params = kwargs["optional_params"] if "optional_params" in kwargs else args[4]
    return params or {}


class ScriptedDesk(CustomLLM):
    def _reply(self, messages, optional_params, model_response):
        text, calls = _decide(messages, optional_params.get("tools"))
        structured = _json_answer(messages, optional_params.get("response_format"))
        if structured is not None and not calls:
            text = structured
        message = model_response.choices[0].message
        message.content = text or None
        if calls:
            message.tool_calls = [
                ChatCompletionMessageToolCall(id=i, type="function", function=Function(name=n, arguments=a))
                for i, n, a in _calls(calls)
            ]
        model_response.choices[0].finish_reason = "tool_calls" if calls else "stop"
        return model_response

    def _chunks(self, messages, optional_params) -> Iterator[GenericStreamingChunk]:
        text, calls = _decide(messages, optional_params.get("tools"))
        structured = _json_answer(messages, optional_params.get("response_format"))
        if structured is not None and not calls:
            text = structured
        breaks_off = "break off" in _last_user(messages)

        def chunk(text="", tool_use=None, finish=""):
            return GenericStreamingChunk(
                text=text,
                tool_use=tool_use,
                is_finished=bool(finish),
                finish_reason=finish,
                usage=None,
                index=0,
            )

        for k in range(0, len(text), 4):
            yield chunk(text=text[k : k + 4])
            if breaks_off and k >= 8:
                raise RuntimeError("the scripted model broke off mid-stream")
        for index, (call_id, name, arguments) in enumerate(_calls(calls)):
            half = len(arguments) // 2
            yield chunk(tool_use={"id": call_id, "type": "function", "index": index,
                                  "function": {"name": name, "arguments": ""}})
            for part in (arguments[:half], arguments[half:]):
                yield chunk(tool_use={"id": None, "type": "function", "index": index,
                                      "function": {"name": None, "arguments": part}})
        yield chunk(finish="tool_calls" if calls else "stop")

    def completion(self, model, messages, api_base, custom_prompt_dict, model_response, *args, **kwargs):
        return self._reply(messages, _params(args, kwargs), model_response)

    async def acompletion(self, model, messages, api_base, custom_prompt_dict, model_response, *args, **kwargs):
        return self._reply(messages, _params(args, kwargs), model_response)

    def streaming(self, model, messages, api_base, custom_prompt_dict, model_response, *args, **kwargs):
        yield from self._chunks(messages, _params(args, kwargs))

    async def astreaming(self, model, messages, api_base, custom_prompt_dict, model_response, *args, **kwargs):
        for c in self._chunks(messages, _params(args, kwargs)):
            yield c


scripted_desk = ScriptedDesk()
