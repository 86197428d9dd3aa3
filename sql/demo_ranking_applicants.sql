-- demo_ranking_applicants: one row per law-school applicant of the bundled file (id = the file's own index),
-- with the model's inputs, the actual first-year average and a seeded half (fit = true: the model is fitted on
-- these; the other half is ranked and audited).
with law as (

    select * from law_raw

),

final as (

    select
        column0 as id,
        race,
        cast(sex as varchar) as sex,
        region_first,
        LSAT as lsat,
        UGPA as ugpa,
        ZFYA as zfya,
        hash(column0, 20170315) % 2 = 0 as fit
    from law

)

select * from final
