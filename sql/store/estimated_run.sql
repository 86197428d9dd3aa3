-- estimated_run (tasks/store/history.py last_estimated_document): among a model's newest $look_back recorded
-- audits, the newest made without labels on the same predictions (their sha256), whose estimates a labelled audit
-- of those people checks. The small inputs column picks the candidates (same predictions, no labels rows: an
-- audit without labels records its labels input with 0 rows); only their documents (about 1 MB each) are parsed,
-- inside DuckDB: only the match crosses into Python.
with recent as (
    select seq, inputs, document from runs where model_name = $model order by seq desc limit $look_back
),
candidates as (
    select seq, document from recent
    where json_extract_string(inputs, '$.predictions.sha256') = $sha
      and json_extract(inputs, '$.labels.rows')::bigint = 0
)
select document from candidates
-- label_free: the block an audit without labels writes (absent, null or empty otherwise)
where json_extract(document, '$.label_free')::varchar not in ('null', 'false', '{}')
order by seq desc
limit 1
