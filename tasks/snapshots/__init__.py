"""Registries' public dumps built into local snapshots that lookups ask before the live APIs.

| snapshot | input                                                 | builder  | table |
|----------|-------------------------------------------------------|----------|-------|
| `dblp`   | dblp.xml.gz with its dblp.dtd beside it               | dblp.py  | works |
| `arxiv`  | arXiv's metadata snapshot (JSON lines), OAI-PMH updates | arxiv.py | works |
| `crossref` | Crossref's public data file (N.json.gz)             | crossref.py | works |
| `pubmed` | PubMed's baseline and update files (pubmedYYnNNNN.xml.gz) | pubmed.py | works |
| `openalex` | OpenAlex's works snapshot (part_*.gz, manifest)   | openalex.py | works |
| `retractions` | Retraction Watch's CSV                           | retractions.py | notices |

`store.py` keeps them (a staging folder swapped in whole, resumable per input part, a manifest),
`bounded.py` reads a dump's files in bounded memory (every builder reads through it: a gzip
bomb or an endless line is refused, not held), `schema.py` declares the records, `index.py`
indexes them and answers `by_ids` and `by_title`. `sources.py` says where each dump is
published and `fetch.py` downloads it (one polite connection, resumable, checksummed, the disk
checked first); `update.py` brings a built snapshot up to its publisher's present with only what
changed (`citeaudit snapshot fetch` and `update`, the daily deployment of flows/snapshots.py).
A snapshot can verify a citation or show it a mismatch, and is dated (its `label`,
`dblp@2026-11-01`, names the date in every row it decides). One built whole from a registry's
dump is `complete` (its manifest says so): its absence is the registry's answer as of its date
(tasks/lookup/absence.py); one built with a filter (`--since`, `--types`, `--sources`) never
proves absence.
"""
