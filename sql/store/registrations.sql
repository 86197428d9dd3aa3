-- registrations: model registration events, accepted or rejected (the fairgate-registration flow), a hash chain
-- of its own.
create table if not exists registrations (
        seq bigint primary key, registered_at varchar, model_name varchar, model_version varchar,
        detail varchar, prev_hash varchar not null, row_hash varchar not null, status varchar, chain varchar)
