"""The optional entailment judge: does the cited abstract SUPPORT the claim, CONTRADICT it, or
give NOT ENOUGH INFO? Asked of any OpenAI-compatible chat-completions endpoint the user
configures (CITEAUDIT_LLM_URL, CITEAUDIT_LLM_KEY, CITEAUDIT_LLM_MODEL; a local vLLM or Ollama
works the same), over the registries' HTTP stack: rate-limited, retried, cached on disk, the key
sent as a Bearer token below the cache and redacted from every error.

The answer is parsed strictly: exactly one of the three verdicts (case and a final full stop
aside), else None; a failed request is None too, and so is a redirect to another host: that
host's answer, given without the key, is not the configured judge's. A verdict is never a
guess, and it never changes a claim's strength: it is shown beside the embedding score, not
mixed into it.
"""

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, get_args

import httpx

from models.audit import Verdict
from tasks.registries.http import (
    InvalidResponse,
    RegistryHttp,
    RegistryRequestError,
    RegistryUnavailable,
    json_body,
)

VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
INSTRUCTIONS = (
    "You check citations in scientific writing. You are given a claim and the title and "
    "abstract of a work cited for it. Answer SUPPORT if the abstract supports the claim, "
    "CONTRADICT if it contradicts the claim, NOT ENOUGH INFO if it does neither. Answer with "
    "exactly one of SUPPORT, CONTRADICT, NOT ENOUGH INFO and nothing else."
)
log = logging.getLogger(__name__)


class Question(Protocol):
    """A claim and what a registry holds of a work it cites (tasks/support/relevance.Pair)."""

    @property
    def claim(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def abstract(self) -> str | None: ...


def messages(question: Question) -> list[dict[str, str]]:
    title = question.title or "(no title)"
    return [
        {"role": "system", "content": INSTRUCTIONS},
        {
            "role": "user",
            "content": f"Claim: {question.claim}\n\nTitle: {title}\n\n"
            f"Abstract: {question.abstract}",
        },
    ]


def parse_verdict(content: str) -> Verdict | None:
    """One of VERDICTS, or None for anything else (an explanation, two verdicts, a hedge)."""
    text = " ".join(content.split()).removesuffix(".").upper()
    return next((v for v in VERDICTS if v == text), None)


def answer_text(response: httpx.Response) -> str:
    """choices[0].message.content of a chat completion; a body without it is unusable (retried,
    never cached)."""
    body = json_body(response)
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise InvalidResponse("no choices[0].message.content in the completion") from exc
    if not isinstance(content, str):
        raise InvalidResponse("choices[0].message.content is not text")
    return content


class JudgeClient:
    """Verdicts from one chat-completions endpoint and model. Thread-safe."""

    def __init__(self, http: RegistryHttp, model: str, workers: int = 2) -> None:
        self._http = http
        self._model = model
        self._workers = workers
        self._refused = threading.Event()

    def verdict(self, question: Question) -> Verdict | None:
        """The judge's verdict, or None: no abstract, no answer, or an answer that is not one of
        the three. Once the endpoint refuses a request (a bad key, an unknown model) it is not
        asked again: every later request would be refused the same way."""
        if not question.abstract or self._refused.is_set():
            return None
        body = {"model": self._model, "messages": messages(question), "temperature": 0}
        try:
            reply = self._http.post("/chat/completions", answer_text, json=body)
        except RegistryRequestError as exc:
            self._refused.set()
            log.warning("claim-support judge refused the request, asking no more: %s", exc)
            return None
        except RegistryUnavailable as exc:
            log.warning("claim-support judge gave no answer: %s", exc)
            return None
        verdict = parse_verdict(reply.value or "")
        if verdict is None:
            log.warning("claim-support judge answered with something other than a verdict")
        return verdict

    def verdicts(self, questions: Sequence[Question]) -> list[Verdict | None]:
        """One verdict per question, in order; as many requests in flight as the limits allow."""
        with ThreadPoolExecutor(self._workers, thread_name_prefix="judge") as pool:
            return list(pool.map(self.verdict, questions))
