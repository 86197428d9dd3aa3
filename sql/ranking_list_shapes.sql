-- ranking_list_shapes: one row per distinct shape of a ranked list in the staged predictions (its size, lowest
-- and highest rank, distinct ranks, missing and fractional ranks), with how many lists have it and the first of
-- them. Validation judges each shape (a few rows whatever the row count): ranks run 1..n without gaps or ties.
with predictions as (

    select
        {{ list_column }} as list_id,
        {{ rank_column }} is null as rank_missing,
        try_cast({{ rank_column }} as double) as rank_value
    from stg_predictions

),

lists as (

    select
        list_id,
        count(*) as n_items,
        count(*) filter (where rank_missing) as n_missing,
        count(*) filter (where not rank_missing and (rank_value is null or not isfinite(rank_value))) as n_not_numeric,
        count(*) filter (where isfinite(rank_value) and rank_value <> floor(rank_value)) as n_fractional,
        count(distinct rank_value) as n_distinct,
        min(rank_value) as min_rank,
        max(rank_value) as max_rank
    from predictions
    group by list_id

),

final as (

    select
        list_id is null as list_missing,
        cast(n_items as double) as n_items,
        n_missing,
        n_not_numeric,
        n_fractional,
        cast(n_distinct as double) as n_distinct,
        min_rank,
        max_rank,
        count(*) as n_lists,
        min(cast(list_id as varchar)) as first_list
    from lists
    group by all
    order by first_list nulls first

)

select * from final
