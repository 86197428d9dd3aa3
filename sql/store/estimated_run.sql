-- estimated_run (tasks/store/history.py last_estimated_document): among a model's newest $look_back recorded
-- audits, the newest made without labels on the same predictions (their sha256), whose estimates a labelled audit
-- of those people checks. The documents are read inside DuckDB: only the match crosses into Python.
with recent as (
    select seq, document from runs where model_name = $model order by seq desc limit $look_back
)
select document from recent
where json_extract_string(document, '$.inputs.predictions.sha256') = $sha
  -- label_free: the block an audit without labels writes (absent, null or empty otherwise)
  and json_extract(document, '$.label_free')::varchar not in ('null', 'false', '{}')
order by seq desc
limit 1
