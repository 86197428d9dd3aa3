-- estimated_run (tasks/store/history.py last_estimated_document): of the candidate runs $seqs
-- (sql/store/estimated_candidates.sql: a model's newest audits without labels on the same predictions), the
-- newest whose document has estimates, whose estimates a labelled audit of those people checks. Only the
-- match's document crosses into Python.
select document from runs
where list_contains($seqs, seq)
-- label_free: the block an audit without labels writes (absent, null or empty otherwise)
  and json_extract(document, '$.label_free')::varchar not in ('null', 'false', '{}')
order by seq desc
limit 1
