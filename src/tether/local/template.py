"""The chat template the local server uses: ChatML, with tool calls written as a JSON code fence.

Why not the template stored in the GGUF: with it, Qwen2.5-Coder never writes ``<tool_call>``
tags; it writes the call as JSON in a ```` ```json ```` fence, which the server returns as plain
text. This template shows the model its earlier calls in exactly that form, so llama.cpp's
template analysis learns the fence as the tool-call syntax, parses it into ``tool_calls`` and
constrains it with a grammar. The example uses single braces (the stock example's doubled
``{{`` braces get copied by the model), and after tool results a short instruction asks for a
text answer, which stops the small model from calling the same tool again and again.
"""

from __future__ import annotations

from ..tools.search import FOUND_NONE, FOUND_START

__all__ = [
    "DEFAULT_SYSTEM",
    "NO_MATCH_HINT",
    "SEARCH_RESULT_HINT",
    "TOOL_CALL_TEMPLATE",
    "TOOL_RESULT_HINT",
]

DEFAULT_SYSTEM = "You are a helpful assistant."

TOOL_RESULT_HINT = (
    "Use these results to answer the user in plain text."
    " Call another function only if it is really needed."
)

# After a tool search found tools the model's next step is a call, not an answer; after one
# that found none, another search.
SEARCH_RESULT_HINT = "Call the function that does the task, now, with its arguments."
NO_MATCH_HINT = "Search again with other words, or answer the user if no function can do it."

# Written in the style of the stock Qwen templates: all text comes from {{ }} expressions and
# every tag trims around itself, so the prompt is the same with or without Jinja's
# trim_blocks/lstrip_blocks (llama.cpp and Hugging Face render with both on).
TOOL_CALL_TEMPLATE = (
    r"""
{%- if messages and messages[0].role == "system" -%}
    {%- set system_text = messages[0].content -%}
    {%- set turns = messages[1:] -%}
{%- else -%}
    {%- set system_text = "__DEFAULT_SYSTEM__" -%}
    {%- set turns = messages -%}
{%- endif -%}
{{- "<|im_start|>system\n" + system_text -}}
{%- if tools -%}
    {{- "\n\n# Tools\n\nYou can call these functions:" -}}
    {%- for tool in tools -%}
        {{- "\n" + (tool | tojson) -}}
    {%- endfor -%}
    {{- "\n\nTo call a function, reply with only a JSON code block that names it and gives its"
        + " arguments, like this:\n```json\n"
        + '{"name": "function_name", "arguments": {"argument_name": "value"}}'
        + "\n```\nWrite one such block for each call."
        + " When you have what you need, answer in plain text." -}}
{%- endif -%}
{{- "<|im_end|>\n" -}}
{%- for message in turns -%}
    {%- if message.role == "assistant" -%}
        {{- "<|im_start|>assistant\n" -}}
        {%- if message.content -%}
            {{- message.content -}}
        {%- endif -%}
        {%- for call in message.tool_calls or [] -%}
            {%- set fn = call.function if call.function is defined else call -%}
            {%- if message.content or not loop.first -%}
                {{- "\n" -}}
            {%- endif -%}
            {{- '```json\n{"name": "' + fn.name + '", "arguments": ' -}}
            {%- if fn.arguments is string -%}
                {{- fn.arguments -}}
            {%- else -%}
                {{- fn.arguments | tojson -}}
            {%- endif -%}
            {{- "}\n```" -}}
        {%- endfor -%}
        {{- "<|im_end|>\n" -}}
    {%- elif message.role == "tool" -%}
        {%- if loop.first or turns[loop.index0 - 1].role != "tool" -%}
            {{- "<|im_start|>user" -}}
        {%- endif -%}
        {{- "\n<tool_response>\n" + message.content + "\n</tool_response>" -}}
        {%- if loop.last or turns[loop.index0 + 1].role != "tool" -%}
            {%- if message.content.startswith('__FOUND_START__') -%}
                {{- "\n__SEARCH_RESULT_HINT__<|im_end|>\n" -}}
            {%- elif message.content.startswith('__FOUND_NONE__') -%}
                {{- "\n__NO_MATCH_HINT__<|im_end|>\n" -}}
            {%- else -%}
                {{- "\n__TOOL_RESULT_HINT__<|im_end|>\n" -}}
            {%- endif -%}
        {%- endif -%}
    {%- else -%}
        {{- "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n" -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- "<|im_start|>assistant\n" -}}
{%- endif -%}
""".replace("__DEFAULT_SYSTEM__", DEFAULT_SYSTEM)
    .replace("__TOOL_RESULT_HINT__", TOOL_RESULT_HINT)
    .replace("__SEARCH_RESULT_HINT__", SEARCH_RESULT_HINT)
    .replace("__FOUND_START__", FOUND_START)
    .replace("__NO_MATCH_HINT__", NO_MATCH_HINT)
    .replace("__FOUND_NONE__", FOUND_NONE)
)
"""The Jinja source given to the server (``chat_template``, with ``use_jinja``)."""
