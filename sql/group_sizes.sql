-- group_sizes: one row per (sensitive attribute, value) among the aligned rows, with its row count.
with aligned as (

    select * from aligned

),

long as (

    unpivot (select {{ attribute_columns }} from aligned)
    on columns(*)
    into name attribute value group_value

),

final as (

    select
        attribute,
        group_value,
        count(*) as n
    from long
    group by all

)

select * from final
