"""Page lists as people write them: `1-3, 5, 7-9`.

Shared by the readers (RAG contexts cite a paper page by page) and the presentation forms.
"""

from collections.abc import Iterable


def group_pages(pages: Iterable[int]) -> str:
    """Sorted, deduplicated pages with consecutive runs joined: [7, 1, 2, 3, 5, 9, 8] ->
    `1-3, 5, 7-9`. Non-positive numbers are not pages and are left out."""
    ordered = sorted({p for p in pages if p > 0})
    runs: list[tuple[int, int]] = []
    for page in ordered:
        if runs and page == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], page)
        else:
            runs.append((page, page))
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
