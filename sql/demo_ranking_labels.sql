-- demo_ranking_labels: one row per held-out applicant: relevance = the quartile (0 lowest .. 3 highest) of the
-- actual first-year average (ZFYA) among the held-out applicants, a graded relevance as in retrieval evaluation.
with scored as (

    select * from scored_applicants where not fit

),

final as (

    select
        id,
        cast(ntile(4) over (order by zfya, id) - 1 as double) as relevance
    from scored

)

select * from final
