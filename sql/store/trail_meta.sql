-- trail_meta: key -> value (trail_version; key_check, an HMAC of a fixed text that tells a wrong key, never the key).
create table if not exists trail_meta (key varchar primary key, value varchar)
