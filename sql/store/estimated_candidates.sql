-- estimated_candidates (tasks/store/history.py last_estimated_document): among a model's newest $look_back
-- recorded audits, those made without labels on the same predictions (their sha256), newest first: the runs
-- whose documents sql/store/estimated_run.sql then reads. Only the small inputs column is read here: DuckDB
-- keeps the documents (about 1 MB each) compressed together, so reading any of them decompresses the whole
-- column, a cost that grows with the trail; a labelled audit with no such earlier audit reads none.
with recent as (
    select seq, inputs from runs where model_name = $model order by seq desc limit $look_back
)
select seq from recent
where json_extract_string(inputs, '$.predictions.sha256') = $sha
  and json_extract(inputs, '$.labels.rows')::bigint = 0
order by seq desc
