-- proxy_india_surname_given: P(caste category | surname, state) from the SECC 2011 counts, all birth years summed.
-- grain: one row per (state, surname) x category; key = state_key || '|' || surname_key.
-- Input: secc(state_key, surname_key, n_sc, n_st, n_other), keys normalised by tasks/proxy.py.
with secc_counts as (
    select
        state_key || '|' || surname_key as key,
        sum(n_sc)::double as sc,
        sum(n_st)::double as st,
        sum(n_other)::double as other
    from secc
    where state_key is not null and surname_key is not null
    group by all
),

with_total as (
    select *, sc + st + other as total
    from secc_counts
    where sc + st + other > 0
),

final as (
    select key, 'sc' as grp, sc / total as p from with_total
    union all
    select key, 'st' as grp, st / total as p from with_total
    union all
    select key, 'other' as grp, other / total as p from with_total
)

select * from final
