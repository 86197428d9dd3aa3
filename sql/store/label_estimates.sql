-- label_estimates (monitoring, tasks/store/monitor.py): per model and period without labels, the estimates a night
-- made (kind 'estimate'), and once the period's labels arrived, the estimates against the measured values (kind
-- 'check'); one chain.
create table if not exists label_estimates (
        seq bigint primary key, recorded_at varchar, run_id varchar, model_name varchar, period_start varchar,
        kind varchar, reference_run_id varchar, content varchar, chain varchar, prev_hash varchar not null,
        row_hash varchar not null)
