-- stg_predictions: one row per row of the predictions input.
-- Renames the input's columns to the contract (id, score, y_pred); values stay as given so that
-- validation sees exactly what the file holds. An absent score or y_pred column becomes null.
with source as (

    select * from src_predictions

),

final as (

    select
        {{ id_column }} as id,
        {{ score_column }} as score,
        {{ y_pred_column }} as y_pred
    from source

)

select * from final
