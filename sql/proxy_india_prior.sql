-- proxy_india_prior: P(caste category) per state (2011 census totals), plus the national share as key 'india'.
-- grain: one row per state x category.
-- Input: census(district_code, state_key, population, sc, st).
with states as (
    select
        state_key as prior_key,
        sum(sc)::double as sc,
        sum(st)::double as st,
        sum(greatest(population - sc - st, 0))::double as other
    from census
    group by all
    union all
    select
        'india' as prior_key,
        sum(sc)::double,
        sum(st)::double,
        sum(greatest(population - sc - st, 0))::double
    from census
),

with_total as (
    select *, sc + st + other as total from states where sc + st + other > 0
),

final as (
    select prior_key, 'sc' as grp, sc / total as p from with_total
    union all
    select prior_key, 'st' as grp, st / total as p from with_total
    union all
    select prior_key, 'other' as grp, other / total as p from with_total
)

select * from final
