-- demo_multiclass_attributes: one row per COMPAS screening (id): the sensitive attributes of the multiclass demo.
with compas as (

    select * from compas_raw

),

final as (

    select
        id,
        race,
        sex
    from compas

)

select * from final
