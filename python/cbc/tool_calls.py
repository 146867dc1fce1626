"""Tool calls in generated text: which format a chat template teaches its model, and the calls
parsed out of an answer in that format, as OpenAI's `tool_calls` ({"id", "type": "function",
"function": {"name", "arguments": JSON text}}).

Formats (what the model writes; the template's own markers tell them apart):
  hermes      Qwen 2.5 / 3, Hermes: <tool_call>{"name": ..., "arguments": {...}}</tool_call>, one per call
  mistral     [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]  or  [TOOL_CALLS]name[ARGS]{...}
  llama3_json Llama 3.1-3.3: the whole answer is {"name": ..., "parameters": {...}} (calls joined
              by ";"), optionally after <|python_tag|>
  deepseek_v3 <｜tool▁call▁begin｜>function<｜tool▁sep｜>name ```json {...} ```<｜tool▁call▁end｜>
  harmony     gpt-oss: ...to=functions.name ... <|message|>{...}<|call|>
"""
from __future__ import annotations

import json
import re
import uuid

FORMATS = ("hermes", "mistral", "llama3_json", "deepseek_v3", "harmony")

# Where a call begins in each format's text (llama3_json: a JSON object opening the answer).
_STARTS = {
    "hermes": ("<tool_call>",),
    "mistral": ("[TOOL_CALLS]",),
    "deepseek_v3": ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>"),
    "harmony": ("to=functions.",),
    "llama3_json": ("<|python_tag|>", "{"),
}


class ToolCallError(ValueError):
    """An answer that began a tool call the format cannot read."""


def detect(chat_template: str | None) -> str | None:
    """The format a chat template teaches, from the markers it writes; None if it has no tools."""
    if not chat_template:
        return None
    t = chat_template
    if "<tool_call>" in t:
        return "hermes"
    if "[TOOL_CALLS]" in t:
        return "mistral"
    if "tool▁calls▁begin" in t or "tool▁call▁begin" in t:
        return "deepseek_v3"
    if "to=functions." in t or "<|constrain|>" in t:
        return "harmony"
    if "<|python_tag|>" in t or ('"parameters"' in t and "ipython" in t):
        return "llama3_json"
    return None


def hold_from(fmt: str, text: str) -> int | None:
    """Where streaming must stop sending TEXT as content: the start of a call (or of what may
    still become one, a marker's beginning at the end); None when all of it is content."""
    if fmt == "harmony":  # the call's message header starts at its channel
        at = text.find("to=functions.")
        if at >= 0:
            channel = text.rfind("<|channel|>", 0, at)
            start = text.rfind("<|start|>", 0, at)
            return max(channel, start) if max(channel, start) >= 0 else at
    if fmt == "llama3_json":
        lead = len(text) - len(text.lstrip())
        rest = text[lead:]
        if not rest:
            return lead if text else None
        if rest.startswith("{") or rest.startswith("<|python_tag|>") or "<|python_tag|>".startswith(rest):
            return lead
        return None
    best = None
    for marker in _STARTS[fmt]:
        at = text.find(marker)
        if at < 0:  # a marker cut at the end of the text so far
            at = next((len(text) - k for k in range(min(len(marker) - 1, len(text)), 0, -1)
                       if marker.startswith(text[len(text) - k:])), -1)
        if at >= 0 and (best is None or at < best):
            best = at
    return best


def parse(fmt: str, text: str) -> tuple[str | None, list[dict]]:
    """(content, calls): the text before the first call (None if empty) and the calls as
    OpenAI's tool_calls; no calls when the text holds none. Raises ToolCallError when a call
    begins but cannot be read."""
    at = hold_from(fmt, text)
    calls = _PARSERS[fmt](text[at:]) if at is not None else []
    if not calls:
        return (text or None), []
    content = text[:at].strip()
    return (content or None), [_call(name, args) for name, args in calls]


def _call(name: str, arguments) -> dict:
    if not isinstance(name, str) or not name:
        raise ToolCallError(f"a tool call without a function name: {name!r}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return {"id": "call_" + uuid.uuid4().hex[:24], "type": "function",
            "function": {"name": name, "arguments": arguments}}


def _json(text: str, what: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ToolCallError(f"{what} is not valid JSON ({e.msg} at {e.pos}): {text[:200]!r}") from None


def _named(obj, what: str, args_key: str = "arguments") -> tuple:
    if not isinstance(obj, dict) or "name" not in obj:
        raise ToolCallError(f"{what} must be an object with a name: {obj!r}")
    return obj["name"], obj.get(args_key, obj.get("parameters", obj.get("arguments", {})))


def _hermes(text: str) -> list:
    calls = []
    for m in re.finditer(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", text, re.S):
        if m.group(1):
            calls.append(_named(_json(m.group(1), "a <tool_call>"), "a <tool_call>"))
    return calls


def _mistral(text: str) -> list:
    calls = []
    for part in text.split("[TOOL_CALLS]")[1:]:
        part = part.strip()
        if "[ARGS]" in part:  # name[ARGS]{...} (the v11 tokenizers' form)
            name, args = part.split("[ARGS]", 1)
            calls.append((name.strip(), _json(args.strip(), "[ARGS]")))
            continue
        value = _json(part, "[TOOL_CALLS]")
        for obj in value if isinstance(value, list) else [value]:
            calls.append(_named(obj, "a [TOOL_CALLS] entry"))
    return calls


def _llama3_json(text: str) -> list:
    body = text.strip()
    if body.startswith("<|python_tag|>"):
        body = body[len("<|python_tag|>"):].strip()
    if not body.startswith("{"):
        return []
    try:
        objs = [json.loads(body)]
    except json.JSONDecodeError:
        objs = [_json(p.strip(), "a tool call") for p in body.split(";") if p.strip()]
    calls = []
    for obj in objs:
        if not isinstance(obj, dict) or "name" not in obj or \
                not ("parameters" in obj or "arguments" in obj):
            return []  # a JSON answer, not a call
        calls.append(_named(obj, "a tool call", "parameters"))
    return calls


def _deepseek_v3(text: str) -> list:
    pattern = (r"<｜tool▁call▁begin｜>\s*(?:function)?\s*<｜tool▁sep｜>\s*([^\n<]+?)\s*\n"
               r"\s*```(?:json)?\s*(.*?)\s*```\s*(?:<｜tool▁call▁end｜>|$)")
    return [(m.group(1), _json(m.group(2), "a DeepSeek tool call"))
            for m in re.finditer(pattern, text, re.S)]


def _harmony(text: str) -> list:
    pattern = r"to=functions\.([\w.\-]+).*?<\|message\|>(.*?)(?:<\|call\|>|<\|end\|>|$)"
    return [(m.group(1), _json(m.group(2).strip(), "a harmony tool call"))
            for m in re.finditer(pattern, text, re.S)]


def forced_call(fmt: str, tools: list[dict]) -> dict:
    """An xgrammar structural tag that makes the answer exactly one call, in FMT, of one of TOOLS
    (OpenAI's function objects; their parameters schemas bound the arguments): what
    tool_choice "required", or a named function (TOOLS holding it alone), decodes under."""
    options = [_call_format(fmt, t["function"]["name"], t["function"].get("parameters") or {"type": "object"})
               for t in tools]
    return {"type": "structural_tag", "format": options[0] if len(options) == 1 else {"type": "or", "elements": options}}


def _call_format(fmt: str, name: str, params: dict) -> dict:
    def const(text):
        return {"type": "const_string", "value": text}

    def schema(s):  # at most one whitespace character at a time: a sample cannot run on in spaces
        return {"type": "json_schema", "json_schema": s, "max_whitespace_cnt": 1}

    def named(args_key):
        return {"type": "object", "additionalProperties": False, "required": ["name", args_key],
                "properties": {"name": {"const": name}, args_key: params}}
    parts = {
        "hermes": [const("<tool_call>\n"), schema(named("arguments")), const("\n</tool_call>")],
        "llama3_json": [schema(named("parameters"))],
        "mistral": [const("[TOOL_CALLS] ["), schema(named("arguments")), const("]")],
        "deepseek_v3": [const(f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{name}\n```json\n"),
                        schema(params), const("\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>")],
        "harmony": [const(f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"), schema(params)],
    }[fmt]
    return parts[0] if len(parts) == 1 else {"type": "sequence", "elements": parts}


_PARSERS = {"hermes": _hermes, "mistral": _mistral, "llama3_json": _llama3_json,
            "deepseek_v3": _deepseek_v3, "harmony": _harmony}
