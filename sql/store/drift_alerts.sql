-- drift_alerts (monitoring, tasks/monitor_trail.py): one row per drift alert raised; one chain.
create table if not exists drift_alerts (
        seq bigint primary key, recorded_at varchar, run_id varchar, model_name varchar, night varchar,
        stream varchar, metric varchar, slicing varchar, grp varchar, statistic double, threshold double,
        change double, detail varchar, chain varchar, prev_hash varchar not null, row_hash varchar not null)
