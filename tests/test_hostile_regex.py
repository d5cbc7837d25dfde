"""Every regular expression of every reader (tasks/read and below: manuscripts, Markdown,
BibTeX, ...; and the identifier and text helpers they call on what they read) is linear on
hostile input: each is searched in texts made of its own structure with its repeats pumped to
long runs of the characters they repeat (all at once, then one at a time, each ended by a
character that breaks the match), and each search ends within a bound of CPU time. A
quadratic pattern takes seconds on these; the cubic Markdown heading pattern never ended
(`# a` + 4,000 spaces + `x`)."""

import importlib
import pkgutil
import re
import re._constants as sre
import re._parser as sre_parse
import signal
from collections.abc import Iterator
from typing import Any

import pytest

import tasks.read

RUN = 10_000  # a pumped repeat's length
BOUND_S = 0.5  # CPU seconds a search may take (a linear one takes a few ms)
BREAKERS = ("", "\x00", "x", "!", "\n", "#", " ")
PREFIXES = ("", "a", "x ")
# What a class of characters is pumped with: each member tried.
CATEGORIES = {
    sre.CATEGORY_SPACE: " \t\n",
    sre.CATEGORY_NOT_SPACE: "a#",
    sre.CATEGORY_DIGIT: "1",
    sre.CATEGORY_NOT_DIGIT: "a ",
    sre.CATEGORY_WORD: "a1",
    sre.CATEGORY_NOT_WORD: " -",
    sre.CATEGORY_LINEBREAK: "\n",
    sre.CATEGORY_NOT_LINEBREAK: "a ",
}
OTHERS = " a1-\n.x#@[{\\"  # candidates for a negated class


# What the readers call on the text they read, beside their own modules.
SHARED = ("tasks.identifiers", "tasks.textnorm")


def reader_patterns() -> dict[str, re.Pattern[str]]:
    """Each compiled pattern a reader module (or a module of SHARED) holds, by `module.NAME`."""
    found: dict[str, re.Pattern[str]] = {}
    names = [info.name for info in pkgutil.walk_packages(tasks.read.__path__, "tasks.read.")]
    for module_name in [*names, *SHARED]:
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found.setdefault(f"{module.__name__}.{name}", value)
    return found


def _chars(op: Any, av: Any) -> str:
    """The characters one item of a pattern matches (a few of them)."""
    if op is sre.LITERAL:
        return chr(av)
    if op is sre.NOT_LITERAL:
        return "".join(c for c in "ab" if c != chr(av))[:1]
    if op is sre.ANY:
        return "a "
    if op is sre.IN:
        members = ""
        for kind, value in av:
            if kind is sre.LITERAL:
                members += chr(value)
            elif kind is sre.RANGE:
                members += chr(value[0])
            elif kind is sre.CATEGORY:
                members += CATEGORIES.get(value, "a")
        if av and av[0][0] is sre.NEGATE:
            return "".join(c for c in OTHERS if c not in members)[:2] or "~"
        return members[:3]
    return ""


def _near_match(items: Any, pumped: int | None, choice: int, counter: list[int]) -> str:
    """A text that follows `items`: each repeat once (or as few times as it must), the repeat
    numbered `pumped` (every one: None) RUN times; `choice` picks which of an item's
    characters is used."""
    out = []
    for op, av in items:
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, body = av
            number = counter[0]
            counter[0] += 1
            text = _near_match(body, pumped, choice, counter)
            times = max(low, 1)
            if high > 1 and pumped in (None, number):
                times = min(high, max(RUN // max(len(text), 1), 1))
            out.append(text * times)
        elif op is sre.SUBPATTERN:
            out.append(_near_match(av[3], pumped, choice, counter))
        elif op is sre.ATOMIC_GROUP:
            out.append(_near_match(av, pumped, choice, counter))
        elif op is sre.BRANCH:
            out.append(_near_match(av[1][choice % len(av[1])], pumped, choice, counter))
        elif chars := _chars(op, av):
            out.append(chars[choice % len(chars)])
    return "".join(out)


def hostile_texts(pattern: re.Pattern[str]) -> Iterator[str]:
    items = sre_parse.parse(pattern.pattern, pattern.flags)
    counter = [0]
    _near_match(items, -1, 0, counter)
    seen = set()
    for pumped in (None, *range(counter[0])):
        for choice in range(3):
            text = _near_match(items, pumped, choice, [0])
            for prefix in PREFIXES:
                for breaker in BREAKERS:
                    hostile = prefix + text + breaker
                    if hostile not in seen:
                        seen.add(hostile)
                        yield hostile


class _TooSlow(Exception):
    pass


def _stop(*_: object) -> None:
    raise _TooSlow


PATTERNS = reader_patterns()


def test_every_reader_module_is_looked_at() -> None:
    modules = {name.rsplit(".", 1)[0] for name in PATTERNS}
    assert {"tasks.read.markdown", "tasks.read.manuscript", "tasks.read.bibtex"} <= modules
    assert set(SHARED) <= modules
    assert len(PATTERNS) >= 40


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_a_reader_pattern_is_linear_on_long_runs_of_what_it_repeats(name: str) -> None:
    pattern = PATTERNS[name]
    previous = signal.signal(signal.SIGVTALRM, _stop)
    try:
        for text in hostile_texts(pattern):
            signal.setitimer(signal.ITIMER_VIRTUAL, BOUND_S)  # CPU time: the load does not count
            try:
                pattern.search(text)
            except _TooSlow:
                pytest.fail(f"{name} ({pattern.pattern!r}) took over {BOUND_S} s on {text[:40]!r}")
            finally:
                signal.setitimer(signal.ITIMER_VIRTUAL, 0)
    finally:
        signal.signal(signal.SIGVTALRM, previous)
