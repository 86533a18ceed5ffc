"""An OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio), over httpx.

Why httpx and not the ``openai`` package: one POST is all a judge needs, and every behaviour that decides
cost and failure is ours and visible here: an explicit per-call timeout, retries only on 429, 5xx, a
timeout or a refused connection, with a backoff that honours ``Retry-After`` and that tests count (the
``openai`` client retries on its own, twice by default, inside the call). httpx is behind the ``llm`` extra
and imported only when a judge of this kind is built: nothing of the pipeline imports this module.

The API key is sent in the ``Authorization`` header and nowhere else. Every text this module puts into an
error (an endpoint's error body, say) has the key's value scrubbed out first, since a proxy may echo headers.
"""

from __future__ import annotations

import email.utils
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from groundkit.errors import DependencyError, JudgeFault

LLM_EXTRA = "pip install 'groundkit[llm]'"
_SHOWN = 200  # characters of an endpoint's answer shown in an error
_MAX_WAIT_S = 120.0  # the longest Retry-After honoured: a larger one is capped, not obeyed for hours


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:  # pragma: no cover - the extra is installed wherever the tests run
        raise DependencyError(f"an openai: judge needs httpx; {LLM_EXTRA}") from None
    return httpx


@dataclass
class Counts:
    """What the endpoint was asked: requests sent (retries included), tokens answered, waits slept."""

    requests: int = 0
    tokens: int = 0
    waits: list[float] = field(default_factory=list)


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date), capped; None if unreadable."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), _MAX_WAIT_S)


class Endpoint:
    """One model behind one chat-completions URL. Thread-safe: calls may run in parallel."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None, key_env: str, timeout: float,
                 retries: int, backoff: float, max_tokens: int, structured: bool,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        httpx = _httpx()
        self.base_url, self.model, self.key_env = base_url.rstrip("/"), model, key_env
        self._key = api_key or None
        self.timeout, self.retries, self.backoff, self.max_tokens = timeout, retries, backoff, max_tokens
        self.structured = structured
        self._sleep = sleep
        self._lock = threading.Lock()
        self.counts = Counts()
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        # No retries inside httpx (its transport's default is none): every retry is ours, counted, and waited.
        self._client = httpx.Client(timeout=httpx.Timeout(timeout), headers=headers, follow_redirects=False)
        self._httpx = httpx

    def close(self) -> None:
        self._client.close()

    def scrub(self, text: str) -> str:
        """``text`` with the key's value replaced, whatever echoed it."""
        return text.replace(self._key, "[key]") if self._key else text

    def complete(self, prompt: str, schema: dict[str, Any]) -> tuple[str, int]:
        """The model's answer to ``prompt`` (one user message) and the tokens the call took.

        Raises:
            JudgeFault: the endpoint could not be reached or kept failing, refused the key, or answered something
                other than a complete chat completion.
        """
        url = f"{self.base_url}/chat/completions"
        attempt = 0
        while True:
            body: dict[str, Any] = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                                    "temperature": 0, "max_tokens": self.max_tokens}
            structured = self.structured
            if structured:
                body["response_format"] = {"type": "json_schema",
                                           "json_schema": {"name": "answer", "strict": True, "schema": schema}}
            with self._lock:
                self.counts.requests += 1
            wait: float | None = None
            try:
                response = self._client.post(url, json=body)
            except self._httpx.TimeoutException:
                reason = f"no answer from {self.base_url} within judge.timeout = {self.timeout:g} s"
            except self._httpx.TransportError as exc:
                reason = f"cannot reach {self.base_url} ({type(exc).__name__}: {self.scrub(str(exc))[:_SHOWN]})"
            else:
                status = response.status_code
                if status == 200:
                    return self._answer(response)
                if status in (401, 403):
                    held = f"the key in ${self.key_env}" if self._key else f"no key (${self.key_env} is not set)"
                    raise JudgeFault(f"{self.base_url} refused {held}: HTTP {status}",
                                f"set ${self.key_env} to a valid key for this endpoint (judge.api_key_env names "
                                "the variable)")
                if status == 400 and structured and "response_format" in response.text:
                    self.structured = False  # the endpoint offers no structured output: ask plainly, parse defensively
                    continue
                if status != 429 and status < 500:
                    raise JudgeFault(f"{self.base_url} answered HTTP {status}: {self._shown(response.text)}",
                                "check judge.model and judge.base_url (the URL up to /v1)")
                reason = f"{self.base_url} answered HTTP {status}"
                wait = retry_after(response.headers.get("retry-after"))
            if attempt >= self.retries:
                raise JudgeFault(f"{reason}, {attempt + 1} tries in all",
                            "try again later (what was answered is cached), or raise judge.retries, judge.timeout "
                            "or lower judge.concurrency")
            wait = self.backoff * 2 ** attempt if wait is None else wait
            with self._lock:
                self.counts.waits.append(wait)
            self._sleep(wait)
            attempt += 1

    def _shown(self, text: str) -> str:
        text = self.scrub(text)
        shown = json.dumps(text[:_SHOWN], ensure_ascii=True)
        return shown + ("..." if len(text) > _SHOWN else "")

    def _answer(self, response: Any) -> tuple[str, int]:
        try:
            document = response.json()
            choice = document["choices"][0]
            content = choice["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise JudgeFault(f"{self.base_url} answered something that is not a chat completion: "
                        f"{self._shown(response.text)}",
                        "point judge.base_url at an OpenAI-compatible endpoint (the URL up to /v1)") from None
        if choice.get("finish_reason") == "length":
            raise JudgeFault(f"the answer was cut off at judge.max_tokens = {self.max_tokens} tokens: "
                        f"{self._shown(str(content))}", "raise judge.max_tokens")
        if not isinstance(content, str):
            raise JudgeFault(f"the answer's content is {self._shown(repr(content))}, not text",
                        "use a model that answers in text")
        usage = document.get("usage") if isinstance(document, dict) else None
        tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
        tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else 0
        with self._lock:
            self.counts.tokens += tokens
        return content, tokens


def parse_json_answer(text: str) -> Any:
    """The JSON value a model answered, read defensively: code fences and prose around one object are dropped.

    Raises:
        ValueError: no JSON value can be read.
    """
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0].strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        return json.loads(stripped[start:end + 1])
    raise ValueError("not JSON")
