-- cube_cells: the cube's raw cells (fairgate/engine/cube.py, cube_from_raw_cells) as one GROUP BY over a
-- relation with the policy's column names, so the rows never leave DuckDB. Each row: the attributes (as text),
-- the raw label and prediction, the calibration score bin (the engine's edge rule: floor(score * $bins +
-- $tolerance), a score of 1 in the top bin), the sums the cube keeps and the counts of bad scores and weights
-- the engine checks. The per-row work is kept to what the grouping needs: a score outside [0, 1], NaN or null
-- is counted as bad (any bad score refuses the data, so its bin, left as a double, and its sums never reach an
-- audit; tasks/inputs/cube_sql.py casts the bins), and the favourable score (the score itself, or 1 - score
-- when 0 is favourable) is fixed SQL chosen by the task.
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

favourable as (

    select
        *,
        {{ favourable_score }} as __score
    from scored

),

final as (

    select
        {{ attribute_names }},
        __raw_y_true,
        __raw_y_pred,
        least(floor(__score * $bins + $tolerance), $bins - 1) as __score_bin,
        count(*) as __rows,
        coalesce(sum({{ weighted_score }}), 0.0) as __score_sum,
        count(*) filter (where not coalesce(__raw_score between 0 and 1, false)) as __bad_scores,
        first(__raw_score) filter (where not coalesce(__raw_score between 0 and 1, false))
            as __bad_score_example{{ weight_sums }}
    from favourable
    group by all

)

select * from final
