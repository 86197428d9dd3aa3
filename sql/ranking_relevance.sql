-- ranking_relevance: one row counting the staged labels' relevance values that a ranking audit cannot use
-- (missing, not a number, not finite, negative), with the id of the first such row.
with labels as (

    select
        id,
        {{ y_true_column }} is null as missing,
        try_cast({{ y_true_column }} as double) as value
    from stg_labels

),

checked as (

    select
        id,
        missing,
        not missing and value is null as not_numeric,
        value is not null and not isfinite(value) as not_finite,
        isfinite(value) and value < 0 as negative
    from labels

),

final as (

    select
        count(*) as n_rows,
        count(*) filter (where missing) as n_missing,
        count(*) filter (where not_numeric) as n_not_numeric,
        count(*) filter (where not_finite) as n_not_finite,
        count(*) filter (where negative) as n_negative,
        min(cast(id as varchar)) filter (where missing or not_numeric or not_finite or negative) as first_bad_id
    from checked

)

select * from final
