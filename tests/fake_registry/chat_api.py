"""An OpenAI-compatible chat-completions endpoint standing in for the claim-support judge.

Deterministic, by a rule on the prompt (not a language model): the claim's content words (four
letters or more) are looked up in the title and abstract of the user message; if at least half
are there the answer is SUPPORT, or CONTRADICT when the claim is negated (not, no, never);
otherwise NOT ENOUGH INFO. With a key set, a request without `Authorization: Bearer KEY` gets
OpenAI's 401 body, which echoes the key it was given (as a careless server would)."""

import json
import re

from tests.fake_registry.reply import Reply, json_reply

_WORD = re.compile(r"[a-z][a-z-]{3,}")
_NEGATION = re.compile(r"\b(not|no|never)\b", re.IGNORECASE)
_PROMPT = re.compile(r"Claim:(?P<claim>.*?)\n\s*\n(?P<work>.*)", re.DOTALL)


def verdict_for(prompt: str) -> str:
    found = _PROMPT.search(prompt)
    if found is None:
        return "NOT ENOUGH INFO"
    claim_words = set(_WORD.findall(found["claim"].lower()))
    work_words = set(_WORD.findall(found["work"].lower()))
    if not claim_words or len(claim_words & work_words) < len(claim_words) / 2:
        return "NOT ENOUGH INFO"
    return "CONTRADICT" if _NEGATION.search(found["claim"]) else "SUPPORT"


def completion(content: str, model: str) -> Reply:
    return json_reply(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    )


def complete(body: bytes, key: str | None, authorization: str) -> Reply:
    if key is not None and authorization != f"Bearer {key}":
        given = authorization.removeprefix("Bearer ")
        return _error(401, f"Incorrect API key provided: {given}.", "invalid_api_key")
    try:
        request = json.loads(body)
        model = request["model"]
        prompt = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
    except (ValueError, KeyError, TypeError, StopIteration):
        return _error(400, "model and a user message are required", None)
    return completion(verdict_for(prompt), model)


def chatty(body: bytes) -> Reply:
    """A well-formed completion whose answer is not just a verdict (the judge must not guess)."""
    request = json.loads(body)
    prompt = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
    return completion(f"I think the answer is {verdict_for(prompt)}, mostly.", request["model"])


def _error(status: int, message: str, code: str | None) -> Reply:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    return json_reply({"error": error}, status=status)
