"""How a job ends, whatever started it (an audit, a crew report, a bulk import, the scheduled
audit, an agent's add): no Prefect here, the flows wrap these functions in thin tasks.

    checked citations -> dedupe (against the library) -> score -> render -> job folder + library

    audited.py  the audited job (`AuditedJob`), its rendered outputs (`Rendered`), its summary
    finish.py   `finish(params, job, source, db)`: the one way a job ends, its checked citations
                in memory (`Checks`, an audit) or stored in batches (`StoredChecks`, an import);
                dedupe and score, and the stages an agent's job ends through (`end_job`, or, the
                library locked, `end_unstored`: the folder alone, marked not stored)
    render.py   the job's tables (`citation_rows`: the one builder of a citation row with its
                scores), bibliographies, exports and report, as data and text
    folder.py   the job folder writer: a whole job (`write_job`), or fed batch by batch from the
                stored citations (`write_import`), plus the crew's answers and a recheck's folder
    library.py  the job's save (the library opened by tasks.store.open_library, where the entry
                point resolved it)
    batches.py  a bulk import's working tables (tasks/store/scratch.py): its citation ids in input
                order, its dedupe done there (tasks/dedupe/stored.py), its save streamed from
                them, its stored citations read back a batch at a time, a batch's rows stored
    recheck.py  how a scheduled audit ends: its re-checked rows, the library updated, its folder
    changes.py  what a scheduled audit re-checks, and what changed since the last check
    agent.py    an agent's job as the library holds it (`JobState`), loaded and stored
"""
