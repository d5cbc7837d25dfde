"""Reading a pair's two sides: each record key stands twice in a compared pair, `<key>_a` and
`<key>_b` (compare.compared_pairs); a key missing on either side neither agrees nor differs."""

import polars as pl


def both(column: str) -> pl.Expr:
    """Whether both records hold `column`."""
    return pl.col(f"{column}_a").is_not_null() & pl.col(f"{column}_b").is_not_null()


def same(column: str) -> pl.Expr:
    """Whether both records hold `column`, the same value."""
    return (both(column) & (pl.col(f"{column}_a") == pl.col(f"{column}_b"))).fill_null(False)


def differ(column: str) -> pl.Expr:
    """Whether both records hold `column`, different values."""
    return (both(column) & (pl.col(f"{column}_a") != pl.col(f"{column}_b"))).fill_null(False)
