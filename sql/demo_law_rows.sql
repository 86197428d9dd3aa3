-- demo_law_rows: one row per law student of the bundled law-school file (id = its unnamed index column):
-- the sensitive attributes as text, the two admission features and the first-year average (ZFYA).
with law as (

    select * from law_raw

),

final as (

    select
        column0 as id,
        cast(race as varchar) as race,
        cast(sex as varchar) as sex,
        cast(LSAT as double) as lsat,
        cast(UGPA as double) as ugpa,
        cast(ZFYA as double) as zfya
    from law

)

select * from final
