"""The evidence about a compared pair, in named pieces: what the rule table
(compare.RULES) reads by name to decide merge, link or distinct.

Every piece is a polars expression over one compared pair's columns (each record key twice,
`<key>_a` and `<key>_b`, beside the pair's similarities: compare.compared_pairs), so that all
pairs are judged at once and polars evaluates a piece several rules share only once. The
pieces come in groups, each a small function of the thresholds (and of the groups before it)
returning a NamedTuple of expressions, testable on its own:

- authors: the same people, give or take how sources spell, cut and order names;
- printed: the publication facts (year, venue kind, volume, pages): one printing or two;
- titles: alike enough for their length, or less alike but backed by the same authors, year or
  place in print; numbers (parts, editions) that differ;
- identifiers: what the records name outright: identifiers, the registry's relations, notices,
  preprint stage, form, book, list;
- likeness: the groups weighed together, by the rules or the learned weights, under hard stops
  no likeness overrules; one work, one paper printed twice, and a merge's score.

authors -> printed -> titles -> identifiers, likeness: a group reads only those before it;
compare.evidence names the pieces for the rules. sides holds how a pair's two sides are read
(both known, the same, different).
"""
