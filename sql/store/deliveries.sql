-- deliveries: one row per report e-mail, a hash chain of its own.
create table if not exists deliveries (
        seq bigint primary key, run_id varchar, recorded_at varchar, recipients varchar, status varchar,
        detail varchar, prev_hash varchar not null, row_hash varchar not null, chain varchar)
