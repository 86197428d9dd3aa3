-- proxy_india_pincode_given: P(PIN area | caste category), the PIN area being the 2011 census district(s) it reaches.
-- grain: one row per PIN code x category.
-- P(district | g) = count_g(district) / count_g(state); a PIN spanning several districts gets their sum.
-- Inputs: census(district_code, state_key, population, sc, st), crosswalk(pincode, district_code).
with districts as (
    select
        district_code,
        state_key,
        sc::double as sc,
        st::double as st,
        greatest(population - sc - st, 0)::double as other
    from census
),

shares as (
    select
        district_code,
        sc / nullif(sum(sc) over (partition by state_key), 0) as sc,
        st / nullif(sum(st) over (partition by state_key), 0) as st,
        other / nullif(sum(other) over (partition by state_key), 0) as other
    from districts
),

pin_districts as (
    select distinct pincode, district_code
    from crosswalk
    where district_code is not null
),

pin_shares as (
    select
        pin_districts.pincode as key,
        sum(coalesce(shares.sc, 0)) as sc,
        sum(coalesce(shares.st, 0)) as st,
        sum(coalesce(shares.other, 0)) as other
    from pin_districts
    inner join shares using (district_code)
    group by all
),

final as (
    select key, 'sc' as grp, sc as p from pin_shares
    union all
    select key, 'st' as grp, st as p from pin_shares
    union all
    select key, 'other' as grp, other as p from pin_shares
)

select * from final
