-- stg_predictions: one row per row of the predictions input.
-- The id column becomes id; score and y_pred keep the names the policy gives them (the engine reads those
-- names, so nothing renames them back later); values stay as given so that validation sees exactly what the
-- file holds. An absent score or y_pred column becomes null under the policy's name. A ranking audit adds its
-- list id and rank columns (under the policy's names); other audits add none. The policy's weight column
-- (columns.weight) comes along, as given, when this input holds it.
with source as (

    select * from src_predictions

),

final as (

    select
        {{ id_column }} as id,
        {{ score_value }} as {{ score_column }},
        {{ y_pred_value }} as {{ y_pred_column }}{{ ranking_columns }}{{ weight_column }}
    from source

)

select * from final
