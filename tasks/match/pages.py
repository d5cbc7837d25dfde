"""Page agreement: `123--130`, `123-30`, `pp. 123-130`, `e123`, `123` and article numbers name the
same place when their first pages agree."""

import re

_FIRST_PAGE = re.compile(r"^\s*(?:pp?\.?\s*)?([a-z]?)(\d+|[ivxlcdm]+)\b", re.IGNORECASE)


def first_page(pages: str | None) -> str | None:
    """The first page or article number, without an `e`/`S` prefix: `e1003` -> `1003`."""
    if not pages:
        return None
    match = _FIRST_PAGE.match(pages)
    return match.group(2).lower() if match else None


def pages_agreement(claimed: str | None, record: str | None) -> float | None:
    """1.0 when the first pages agree, 0.0 when they differ, None when a side has no pages."""
    mine, theirs = first_page(claimed), first_page(record)
    if mine is None or theirs is None:
        return None
    return 1.0 if mine == theirs else 0.0


def pages_in_text(pages: str | None, text: str) -> bool:
    page = first_page(pages)
    return page is not None and re.search(rf"(?<![\d.]){re.escape(page)}(?!\d)", text) is not None
