-- stg_attributes: one row per row of the attributes input: id and one text column per sensitive attribute.
-- Group values are compared as text, as they appear in the data (DESIGN.md).
with source as (

    select * from src_attributes

),

final as (

    select
        {{ id_column }} as id,
        {{ attribute_columns }}
    from source

)

select * from final
