-- runs: one row per recorded audit, hash-chained (prev_hash -> run_hash over the row, its metric results and
-- its cube). Column order is part of the hash (tasks/store/columns.py RUN_COLUMNS): never reorder, only append.
create table if not exists runs (
        seq bigint primary key, run_id varchar unique not null, recorded_at varchar, created_at varchar,
        model_name varchar, model_version varchar, fairgate_version varchar, verdict varchar, exit_code integer,
        n_rows bigint, inputs varchar, policy_text varchar, policy_sha256 varchar, validation varchar,
        join_report varchar, document varchar, prev_hash varchar not null, run_hash varchar not null,
        chain varchar)
