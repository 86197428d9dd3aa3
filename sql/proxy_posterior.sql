-- proxy_posterior: P(group | surname, first name, area) for each person, BISG-style, with the fallback used.
-- grain: one row per person; probabilities is a list in the groups' order (see proxy_factor_vectors);
-- has_name / has_first_name / has_area say which lookups found the person's key (for the coverage report).
--
-- Inputs (registered by tasks/proxy.py; keys already normalised, tables already as vectors):
--   proxy_people(person, name_key, name_alt_key, first_key, area_key, prior_key)
--   proxy_name_vectors(key, ps)    P(group | name)          Census 2010 surnames, SECC surname x state, ...
--   proxy_first_vectors(key, ps)   P(first name | group)    BIFSG only (empty otherwise)
--   proxy_area_vectors(key, ps)    P(area | group)          ZCTA, or PIN code via 2011 census districts
--   proxy_prior_vectors(key, ps)   P(group)                 national, or per state
--
-- Posterior: P(g | s, f, a) proportional to base(g) * P(f | g) * P(a | g), where base(g) = P(g | s) when the
-- surname is known (a compound surname not in the table is tried by its first part) and the prior P(g)
-- otherwise; an unknown first name or area drops its factor. The factors used name the fallback. If the
-- product is zero for every group (an area with nobody of the surname's groups), the likelihoods are dropped
-- and the base alone is used ('surname_only' or 'prior').
with people as (
    select person, name_key, name_alt_key, first_key, area_key, prior_key
    from proxy_people
),

resolved as (
    select
        people.person,
        coalesce(whole.ps, part.ps) as name_ps,
        first_names.ps as first_ps,
        areas.ps as area_ps,
        prior.ps as prior_ps
    from people
    left join proxy_name_vectors as whole on whole.key = people.name_key
    left join proxy_name_vectors as part on part.key = people.name_alt_key
    left join proxy_first_vectors as first_names on first_names.key = people.first_key
    left join proxy_area_vectors as areas on areas.key = people.area_key
    left join proxy_prior_vectors as prior on prior.key = people.prior_key
),

products as (
    select
        person,
        name_ps is not null as has_name,
        first_ps is not null as has_first,
        area_ps is not null as has_area,
        coalesce(name_ps, prior_ps) as base,
        list_transform(
            coalesce(name_ps, prior_ps),
            lambda x, i: x * coalesce(first_ps[i], 1.0) * coalesce(area_ps[i], 1.0)
        ) as joint
    from resolved
),

totals as (
    select *, list_sum(joint) as joint_total, list_sum(base) as base_total
    from products
),

final as (
    select
        person,
        case
            when joint_total > 0 then list_transform(joint, lambda x: x / joint_total)
            else list_transform(base, lambda x: x / base_total)
        end as probabilities,
        case
            when joint_total > 0 and has_name and has_first and has_area then 'surname_first_name_geography'
            when joint_total > 0 and has_name and has_area then 'surname_geography'
            when joint_total > 0 and has_name and has_first then 'surname_first_name'
            when has_name then 'surname_only'
            when joint_total > 0 and has_first and has_area then 'first_name_geography'
            when joint_total > 0 and has_area then 'geography_only'
            when joint_total > 0 and has_first then 'first_name_only'
            else 'prior'
        end as fallback,
        has_name,
        has_first as has_first_name,
        has_area
    from totals
)

select * from final
