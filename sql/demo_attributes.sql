-- demo_attributes: one row per COMPAS screening (id): the sensitive attributes audited by the demo.
with compas as (

    select * from compas_raw

),

final as (

    select
        id,
        race,
        sex,
        age_cat
    from compas

)

select * from final
