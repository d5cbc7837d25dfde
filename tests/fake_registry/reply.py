"""An HTTP answer before it is written: what each endpoint returns, independent of the socket."""

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)


def json_reply(value: Any, status: int = 200, content_type: str = "application/json") -> Reply:
    return Reply(status, json.dumps(value, ensure_ascii=False).encode("utf-8"), content_type)


def text_reply(text: str | bytes, status: int, content_type: str) -> Reply:
    body = text.encode("utf-8") if isinstance(text, str) else text
    return Reply(status, body, content_type)
