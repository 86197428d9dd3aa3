-- history_runs (tasks/store/history.py model_history): the model's newest $limit recorded runs (but
-- $exclude, the current run when it is re-run), newest first, each with its confidence level and its results'
-- standard errors by result position (kept only in the stored document, which is hashed with the run: the
-- metric_results table keeps its hashed columns unchanged, so older trails still verify). Each document (about
-- 1 MB) is parsed once, for both; then only its results array.
select seq, run_id, recorded_at, model_version, verdict, inputs,
    parts[1] ->> '$' as confidence_level,
    list_transform(json_extract(parts[2], '$[*]'), lambda r: json_extract_string(r, '$.standard_error'))
from (
    select seq, run_id, recorded_at, model_version, verdict, inputs,
        json_extract(document, ['$.confidence_level', '$.results']) as parts
    from runs
    where model_name = $model and run_id is distinct from $exclude
    order by seq desc
    limit $limit
)
order by seq desc
