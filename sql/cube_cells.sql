-- cube_cells: the cube's raw cells (fairgate/engine/cube.py, cube_from_raw_cells) as one GROUP BY over a
-- relation with the policy's column names, so the rows never leave DuckDB. Each row: the attributes (as text),
-- the raw label and prediction, the calibration score bin (the engine's edge rule: floor(score * $bins +
-- $tolerance), clipped), the sums the cube keeps and the counts of bad scores and weights the engine checks.
-- The weight sums (sql/cube_weight_sums.sql) are summed only when the rows carry weights: without them every
-- weight is 1 and the engine takes the sums from the row counts (fairgate/engine/cube.py, unit_weight_sums).
with source as (

    {{ relation }}

),

scored as (

    select
        {{ attribute_columns }},
        {{ y_true_column }} as __raw_y_true,
        {{ y_pred_value }} as __raw_y_pred,
        {{ score_value }} as __raw_score,
        {{ weight_value }} as __weight,
        {{ person_weight_value }} as __person_weight
    from source

),

checked as (

    select
        *,
        coalesce(__raw_score is null or isnan(__raw_score) or __raw_score < 0 or __raw_score > 1, true)
            as __bad_score
    from scored

),

favourable as (

    select
        *,
        -- the score of the favourable outcome: P(y = 1) flips to P(y = 0) when 0 is favourable
        case when __bad_score then 0.0 when $flip then 1.0 - __raw_score else __raw_score end as __score
    from checked

),

binned as (

    select
        *,
        cast(least(greatest(floor(__score * $bins + $tolerance), 0), $bins - 1) as smallint) as __score_bin
    from favourable

),

final as (

    select
        {{ attribute_names }},
        __raw_y_true,
        __raw_y_pred,
        __score_bin,
        count(*) as __rows,
        coalesce(sum(__score * __weight), 0.0) as __score_sum,
        count(*) filter (where __bad_score) as __bad_scores,
        first(__raw_score) filter (where __bad_score) as __bad_score_example{{ weight_sums }}
    from binned
    group by all

)

select * from final
