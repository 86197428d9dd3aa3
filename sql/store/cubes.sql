-- cubes: the run's cube (hashed with its run), for monitoring.
create table if not exists cubes (run_id varchar not null, cells varchar)
