-- monitor_nights (monitoring, tasks/monitor_trail.py): each monitored night's windows and observations; one chain.
create table if not exists monitor_nights (
        seq bigint primary key, recorded_at varchar, run_id varchar, model_name varchar, night varchar,
        windows varchar, observations varchar, chain varchar, prev_hash varchar not null,
        row_hash varchar not null)
