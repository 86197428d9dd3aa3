-- score_histogram: the fine score histogram for AUC at scale (fairgate/engine/auc_histogram.py): the weight
-- per (attributes, favourable label, one of $histogram_bins equal bins of the favourable score on [0, 1]),
-- with the engine's bin-edge rule, label recoding and missing-value rules (kept_rows, attribute_columns), so
-- it is final as it leaves DuckDB. Rows with a bad score are left out (the cube's cells refuse them anyway).
with source as (

    {{ relation }}

),

scored as (

    select
        {{ attribute_columns }},
        cast(try_cast({{ y_true_column }} as double) as tinyint) = $favourable as __y_true,
        {{ score_value }} as __raw_score,
        {{ weight_value }} as __weight
    from source
    where {{ kept_rows }}

),

favourable as (

    select
        * exclude (__raw_score),
        case when $flip then 1.0 - __raw_score else __raw_score end as __score
    from scored
    where __raw_score between 0 and 1

),

final as (

    select
        {{ attribute_names }},
        cast(__y_true as tinyint) as __y_true,
        cast(least(greatest(floor(__score * $histogram_bins + $tolerance), 0), $histogram_bins - 1) as integer)
            as __score_hbin,
        coalesce(sum(__weight), 0.0) as __weight
    from favourable
    group by all

)

select * from final
