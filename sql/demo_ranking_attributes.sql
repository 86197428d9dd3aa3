-- demo_ranking_attributes: one row per held-out applicant: race and sex as the file codes them.
with scored as (

    select * from scored_applicants where not fit

),

final as (

    select
        id,
        race,
        sex
    from scored

)

select * from final
