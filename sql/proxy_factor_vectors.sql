-- proxy_factor_vectors: a long probability table (key, grp, p) as one list per key, in the groups' order.
-- grain: one row per key.
-- Inputs: factor_long(key, grp, p), proxy_groups(grp, position). A group a key lacks counts as 0, so every
-- list has one entry per group and lists of different tables line up position by position.
with keys as (
    select distinct key from factor_long
),

cells as (
    select keys.key, proxy_groups.position, coalesce(factor_long.p, 0.0) as p
    from keys
    cross join proxy_groups
    left join factor_long on factor_long.key = keys.key and factor_long.grp = proxy_groups.grp
),

final as (
    select key, list(p order by position) as ps
    from cells
    group by key
)

select * from final
