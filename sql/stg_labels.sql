-- stg_labels: one row per row of the labels input: id, and y_true under the policy's name, values as given.
with source as (

    select * from src_labels

),

final as (

    select
        {{ id_column }} as id,
        {{ y_true_column }}
    from source

)

select * from final
