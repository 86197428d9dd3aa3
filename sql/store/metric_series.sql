-- metric_series (fairgate explore): one metric's recorded results across a model's runs, oldest run first.
select r.seq, r.run_id, r.recorded_at, r.model_version, r.verdict, m.slicing, m.value, m.ci_low, m.ci_high,
       m.threshold, m.direction, m.status
from runs r join metric_results m using (run_id)
where r.model_name = $model and m.metric = $metric
order by r.seq, m.position
