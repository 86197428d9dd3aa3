-- proxy_posterior: P(group | surname, first name, area) for each person, BISG-style, with the fallback used.
-- grain: one row per person x group.
--
-- Inputs (registered by tasks/proxy.py; keys already normalised):
--   proxy_people(person, name_key, name_alt_key, first_key, area_key, prior_key)
--   proxy_name_given(key, grp, p)    P(group | name)          e.g. Census 2010 surnames, SECC surname x state
--   proxy_first_given(key, grp, p)   P(first name | group)    BIFSG only (empty otherwise)
--   proxy_area_given(key, grp, p)    P(area | group)          ZCTA, or PIN code via 2011 census districts
--   proxy_prior(prior_key, grp, p)   P(group)                 national, or per state
--
-- Posterior: P(g | s, f, a) proportional to base(g) * P(f | g) * P(a | g), where base(g) = P(g | s) when the
-- surname is known and the prior P(g) otherwise; an unknown first name or area drops its factor. The factors
-- used name the fallback. If the product is zero for every group (e.g. an area with nobody of the surname's
-- groups), the likelihoods are dropped and the base alone is used ('surname_only' or 'prior').
with people as (
    select person, name_key, name_alt_key, first_key, area_key, prior_key
    from proxy_people
),

known_names as (
    select distinct key from proxy_name_given
),

known_first as (
    select distinct key from proxy_first_given
),

known_areas as (
    select distinct key from proxy_area_given
),

-- a compound surname not in the table is tried by its first part
resolved as (
    select
        people.person,
        people.prior_key,
        coalesce(whole.key, part.key) as name_key,
        first_names.key as first_key,
        areas.key as area_key
    from people
    left join known_names as whole on whole.key = people.name_key
    left join known_names as part on part.key = people.name_alt_key
    left join known_first as first_names on first_names.key = people.first_key
    left join known_areas as areas on areas.key = people.area_key
),

spine as (
    select resolved.*, prior.grp, prior.p as prior_p
    from resolved
    inner join proxy_prior as prior on prior.prior_key = resolved.prior_key
),

factors as (
    select
        spine.person,
        spine.grp,
        spine.name_key is not null as has_name,
        spine.first_key is not null as has_first,
        spine.area_key is not null as has_area,
        coalesce(name_given.p, spine.prior_p) as base,
        coalesce(name_given.p, spine.prior_p) * coalesce(first_given.p, 1.0) * coalesce(area_given.p, 1.0) as joint
    from spine
    left join proxy_name_given as name_given on name_given.key = spine.name_key and name_given.grp = spine.grp
    left join proxy_first_given as first_given on first_given.key = spine.first_key and first_given.grp = spine.grp
    left join proxy_area_given as area_given on area_given.key = spine.area_key and area_given.grp = spine.grp
),

totals as (
    select
        *,
        sum(joint) over (partition by person) as joint_total,
        sum(base) over (partition by person) as base_total
    from factors
),

final as (
    select
        person,
        grp,
        case when joint_total > 0 then joint / joint_total else base / base_total end as probability,
        case
            when joint_total > 0 and has_name and has_first and has_area then 'surname_first_name_geography'
            when joint_total > 0 and has_name and has_area then 'surname_geography'
            when joint_total > 0 and has_name and has_first then 'surname_first_name'
            when has_name then 'surname_only'
            when joint_total > 0 and has_first and has_area then 'first_name_geography'
            when joint_total > 0 and has_area then 'geography_only'
            when joint_total > 0 and has_first then 'first_name_only'
            else 'prior'
        end as fallback
    from totals
)

select * from final
