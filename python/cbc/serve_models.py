"""The request bodies of cbc serve as pydantic models: FastAPI validates each field's type and range
with them (strictly: "5" is not a number) and publishes them in the OpenAPI schema (/docs,
/openapi.json). What depends on the model or the tokenizer (token ids in range, the prompt's
length against the context, the chat template, embeddings) is checked after, by serve_api.
Unknown fields are kept (vLLM's extras pass through) and checked there too."""
from __future__ import annotations

import re
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

_OPEN = ConfigDict(strict=True, extra="allow")


class StreamOptions(BaseModel):
    model_config = _OPEN
    include_usage: bool = Field(False, description="a last chunk with the token counts")


class _Sampling(BaseModel):
    """The fields completions and chat completions share."""
    model_config = _OPEN
    model: Optional[str] = Field(None, description="the served model's name (GET /v1/models)")
    max_tokens: Optional[int] = Field(None, ge=1, description="tokens to generate at most")
    max_completion_tokens: Optional[int] = Field(None, ge=1, description="the same, under its newer name")
    temperature: float = Field(1.0, ge=0, le=2, description="0: greedy")
    top_p: float = Field(1.0, ge=0, le=1)
    top_k: int = Field(0, ge=-1, description="0 or -1: off")
    min_p: float = Field(0.0, ge=0, le=1)
    seed: Optional[int] = Field(None, description="repeatable sampling; default: a fresh seed")
    stop: Union[str, list[str], None] = Field(None, description="up to 4 stop strings")
    stop_token_ids: Optional[list[int]] = None
    ignore_eos: bool = Field(False, description="go on past the end tokens")
    n: int = Field(1, ge=1, le=128, description="choices, forked from one prompt")
    best_of: Optional[int] = Field(None, ge=1, description="must equal n")
    presence_penalty: float = Field(0.0, ge=-2, le=2)
    frequency_penalty: float = Field(0.0, ge=-2, le=2)
    repetition_penalty: float = Field(1.0, gt=0, description="transformers' (vLLM extra)")
    min_tokens: int = Field(0, ge=0, description="no end token before this many (vLLM extra)")
    logit_bias: Optional[dict[str, float]] = Field(None, description="token id -> bias in [-100, 100]")
    bad_words: Optional[list[str]] = Field(None, description="strings never generated (vLLM extra)")
    response_format: Optional[dict[str, Any]] = Field(
        None, description='{"type": "json_object"} or {"type": "json_schema", "json_schema": {"schema": ...}}')
    structured_outputs: Optional[dict[str, Any]] = Field(
        None, description="vLLM's: one of json (a schema), regex, grammar (EBNF), json_object")
    stream: bool = False
    stream_options: Optional[StreamOptions] = None
    user: Optional[str] = None


class CompletionRequest(_Sampling):
    prompt: Union[str, list[int], list[str], list[list[int]]] = Field(
        description="one prompt: text or token ids")
    logprobs: Optional[int] = Field(None, ge=0, le=5, description="each token's logprob and N alternatives")
    echo: bool = Field(False, description="the prompt's text (and with logprobs its tokens') before the output")
    suffix: Optional[str] = Field(None, description="not supported")
    embeds: Any = Field(None, description="a multimodal decoder's rows for runs of prompt positions")
    placeholder: Any = Field(None, description="the token id whose runs take the embeds")


class FunctionDef(BaseModel):
    model_config = _OPEN
    name: str
    description: Optional[str] = None
    parameters: Optional[dict[str, Any]] = Field(None, description="a JSON schema")


class Tool(BaseModel):
    model_config = _OPEN
    type: str = "function"
    function: Any = Field(description="a FunctionDef")


class ChatMessage(BaseModel):
    model_config = _OPEN
    role: str = Field(description="system, developer, user, assistant or tool")
    content: Union[str, list[dict[str, Any]], None] = Field(None, description="text, or text parts")
    name: Optional[str] = None
    tool_calls: Optional[list[dict[str, Any]]] = Field(None, description="an assistant's calls")
    tool_call_id: Optional[str] = Field(None, description="the call a tool message answers")


class ChatCompletionRequest(_Sampling):
    messages: list[ChatMessage]
    logprobs: bool = False
    top_logprobs: Optional[int] = Field(None, ge=0, le=20)
    tools: Optional[list[Tool]] = None
    tool_choice: Union[Literal["none", "auto", "required"], dict[str, Any], None] = Field(
        None, description="auto or none; forcing a call is not supported yet")
    parallel_tool_calls: Optional[bool] = None
    add_generation_prompt: bool = True
    chat_template_kwargs: Optional[dict[str, Any]] = Field(None, description="more template variables")


_TYPE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_UNION_BRANCHES = {"str", "int", "float", "bool", "list", "dict", "none"}


def error_param(loc: tuple) -> Optional[str]:
    """A validation error's location as OpenAI's param ("messages[0].role"), without the
    "body" prefix and the union branches pydantic names."""
    out = ""
    for part in loc[1:]:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _TYPE_NAME.fullmatch(part) and part not in _UNION_BRANCHES:
            out += ("." if out else "") + part
        else:
            break
    return out or None


def error_code(kind: str) -> str:
    if kind == "missing":
        return "missing"
    if kind.endswith("_type") or kind.endswith("_parsing") or kind in ("is_instance_of", "union_tag_invalid"):
        return "invalid_type"
    return "invalid_value"
