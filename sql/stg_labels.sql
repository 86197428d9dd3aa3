-- stg_labels: one row per row of the labels input: id, and y_true under the policy's name, values as given;
-- the policy's weight column too when this input holds it (and the predictions do not).
with source as (

    select * from src_labels

),

final as (

    select
        {{ id_column }} as id,
        {{ y_true_column }}{{ weight_column }}
    from source

)

select * from final
