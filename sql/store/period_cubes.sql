-- period_cubes (monitoring, tasks/monitor_trail.py): versioned period cubes, a rebuilt period supersedes, never
-- replaces; one chain. ``status`` and ``superseded_by`` are derived from later rows (not hashed); verify checks them.
create table if not exists period_cubes (
        seq bigint primary key, recorded_at varchar, run_id varchar, model_name varchar, period_start varchar,
        period_end varchar, version integer, supersedes integer, rows bigint, labelled_rows bigint,
        input_sha256 varchar, cube varchar, chain varchar, prev_hash varchar not null, row_hash varchar not null,
        status varchar not null, superseded_by bigint)
