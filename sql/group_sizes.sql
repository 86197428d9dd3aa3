-- group_sizes: one row per (sensitive attribute, value) among the aligned rows, with its row count.
-- One scan with a grouping set per attribute; each row has exactly one attribute column set.
with aligned as (

    select * from aligned

),

final as (

    select
        {{ attribute_columns }},
        count(*) as n
    from aligned
    group by grouping sets ({{ grouping_sets }})

)

select * from final
