-- numeric_violations: one row per row of a staged input whose column is not a finite number (missing, text that
-- is not a number, NaN or infinite) or lies below the caller's bound ({{ below }}: "value < 0.0" for weights,
-- "false" without a bound), at most $max_rows rows; violating_rows counts them all and kind_rows those of the
-- row's kind. Regression labels and predictions and every audit's weights are validated on this table: rows
-- left out are acceptable numbers by construction.
with source as (

    select
        cast({{ column }} as varchar) as raw_value,
        try_cast({{ column }} as double) as value
    from {{ relation }}

),

violations as (

    select
        raw_value,
        value,
        case
            when raw_value is null then 'missing'
            when value is null then 'not a number'
            when isnan(value) then 'NaN'
            when isinf(value) then 'infinite'
            else 'negative'
        end as kind
    from source
    where raw_value is null or value is null or isnan(value) or isinf(value) or {{ below }}

),

final as (

    select
        raw_value,
        value,
        kind,
        count(*) over () as violating_rows,
        count(*) over (partition by kind) as kind_rows
    from violations
    -- Every kind's first rows before any kind's later ones, the most frequent kind first: the kinds counted and
    -- the example shown are the same on every run, whatever order DuckDB scanned the rows in.
    order by
        row_number() over (partition by kind order by raw_value nulls last),
        kind_rows desc,
        kind
    limit $max_rows

)

select * from final
