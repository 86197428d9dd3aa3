-- stg_no_labels: an audit without labels (label-free estimation): one row per prediction, its id and a
-- placeholder label 0 under the policy's name, so that the join, validation and cube run unchanged. Nothing
-- computed from the placeholder is published: label-dependent results are estimated from the scores instead.
with source as (

    select * from src_labels

),

final as (

    select
        {{ id_column }} as id,
        cast(0 as tinyint) as {{ y_true_column }}{{ weight_column }}
    from source

)

select * from final
