-- migrations: what an older trail gains when it is next written to (run after every table's create, in order).
-- A version-1 trail gains the chain column; its old rows keep NULL there (hashed as before, unkeyed).
alter table runs add column if not exists chain varchar;
alter table deliveries add column if not exists chain varchar;
-- Trails created before registrations were recorded have the table (never written) without these two.
alter table registrations add column if not exists status varchar;
alter table registrations add column if not exists chain varchar;
