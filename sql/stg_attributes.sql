-- stg_attributes: one row per row of the attributes input: id and one text column per sensitive attribute.
-- Group values are compared as text, as they appear in the data (DESIGN.md). The policy's weight column comes
-- along, as given, when this input is the one holding it.
with source as (

    select * from src_attributes

),

final as (

    select
        {{ id_column }} as id,
        {{ attribute_columns }}{{ weight_column }}
    from source

)

select * from final
