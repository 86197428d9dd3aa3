-- metric_results: one row per judged metric and slicing of a run (hashed with its run).
create table if not exists metric_results (
        run_id varchar not null, position integer not null, metric varchar, slicing varchar, value double,
        ci_low double, ci_high double, threshold double, direction varchar, status varchar, uncertain boolean,
        critical boolean)
