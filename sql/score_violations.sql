-- score_violations: one row per prediction whose score is null, NaN, infinite or outside [0, 1]
-- (at most $max_rows rows; violating_rows counts them all). Validation runs the score expectations on
-- this table: rows left out satisfy them by construction.
with source as (

    select try_cast({{ score_column }} as double) as score from stg_predictions

),

violations as (

    select score
    from source
    where score is null or isnan(score) or isinf(score) or score < 0 or score > 1

),

final as (

    select
        score,
        count(*) over () as violating_rows
    from violations
    limit $max_rows

)

select * from final
