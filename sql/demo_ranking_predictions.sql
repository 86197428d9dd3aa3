-- demo_ranking_predictions: one row per held-out applicant: the cohort (list) it is ranked in, 40 applicants of
-- one region in file order, and its rank in that cohort by the model's predicted first-year average (ties broken
-- by id), 1 = the top of the shortlist.
with scored as (

    select * from scored_applicants where not fit

),

cohorts as (

    select
        id,
        predicted_zfya,
        region_first || '-' || cast((row_number() over (partition by region_first order by id) - 1) // 40 as varchar)
            as cohort
    from scored

),

final as (

    select
        id,
        cohort,
        cast(row_number() over (partition by cohort order by predicted_zfya desc, id) as integer) as rank
    from cohorts

)

select * from final
