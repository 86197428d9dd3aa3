-- stg_labels: one row per row of the labels input (id, y_true), values as given.
with source as (

    select * from src_labels

),

final as (

    select
        {{ id_column }} as id,
        {{ y_true_column }} as y_true
    from source

)

select * from final
