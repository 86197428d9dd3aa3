-- demo_labels: one row per COMPAS screening (id): did the person reoffend within two years.
with compas as (

    select * from compas_raw

),

final as (

    select
        id,
        two_year_recid
    from compas

)

select * from final
