-- value_counts: one row per distinct value of one column of a staged input, with its row count.
-- Validation runs its set-membership expectations on this small table instead of on every row.
with source as (

    select {{ column }} as raw_value from {{ relation }}

),

final as (

    select
        cast(raw_value as varchar) as value,
        count(*) as n
    from source
    group by all
    order by n desc

)

select * from final
