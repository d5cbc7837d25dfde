"""Counts as people read them: "1 citation", "2 citations". One home for the CLI's lines, the
reports and the short summary, so none of them says "1 input errors"."""


def counted(n: int, noun: str) -> str:
    """'1 citation', '2 citations' (the nouns citeaudit counts all take an s)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
