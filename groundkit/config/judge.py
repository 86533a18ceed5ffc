"""The ``judge`` section of params.yaml: the LLM judge of ``groundkit judgments judge`` and ``propose``.

Its own module, as the ``gate`` section's is: no stage reads it, and it names the judge's endpoint, limits and
prompt, which only the labelling commands (groundkit/labels/) use.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from groundkit.artifacts.models import StrictRecord


class JudgeParams(StrictRecord):
    """The judge of ``groundkit judgments judge`` and ``propose`` (groundkit/labels/): no stage reads this section.

    Attributes:
        model: ``openai:MODEL`` or ``python:MODULE:FACTORY``; empty means ``--judge`` must name one.
        base_url: The OpenAI-compatible endpoint (``--base-url`` overrides it), up to ``/v1``.
        api_key_env: The environment variable holding the key; the key itself is never written anywhere.
        prompt: A prompt template of your own (``${query}``, ``${passage}``); empty: the one groundkit ships.
        propose_prompt: The same for ``judgments propose`` (``${passage}``).
        options: Handed to a ``python:`` judge's factory.
        concurrency: Calls in flight at once (a ``python:`` judge is called one call at a time).
        timeout: Seconds one call may take before it is retried.
        retries: How often a call is retried after a 429, a 5xx, a timeout or a refused connection.
        backoff: Seconds before the first retry, doubled each time (a ``Retry-After`` header wins).
        max_tokens: The most tokens one answer may take.
        structured: Ask for structured output (``response_format`` with a JSON schema); an endpoint that refuses
            it is asked again without it, and its answers parsed defensively.
    """

    model: str = ""
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = Field(default="OPENAI_API_KEY", min_length=1)
    prompt: str = ""
    propose_prompt: str = ""
    options: dict[str, Any] = Field(default_factory=dict)
    concurrency: int = Field(default=4, ge=1, le=64)
    timeout: float = Field(default=60.0, gt=0.0)
    retries: int = Field(default=4, ge=0, le=20)
    backoff: float = Field(default=1.0, ge=0.0)
    max_tokens: int = Field(default=512, ge=16)
    structured: bool = True

    @field_validator("model")
    @classmethod
    def _known_judge(cls, value: str) -> str:
        if value:
            from groundkit.labels.spec import parse_judge

            parse_judge(value)
        return value
