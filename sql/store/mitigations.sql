-- mitigations: one row per mitigation run (a failing audit's proposal, or `fairgate mitigate`): the audit run it
-- answers, the method, its files with their sha256 and the verdict before and after; a hash chain of its own.
create table if not exists mitigations (
        seq bigint primary key, recorded_at varchar, mitigation_id varchar, answers varchar, method varchar,
        status varchar, verdict_before varchar, verdict_after varchar, outputs varchar, chain varchar,
        prev_hash varchar not null, row_hash varchar not null)
