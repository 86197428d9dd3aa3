-- prediction_provenance: one row per (model name, model version) found in the predictions input, with the
-- time span and count of its predictions, when the input carries those optional columns.
with source as (

    select * from src_predictions

),

final as (

    select
        {{ model_name }} as model_name,
        {{ model_version }} as model_version,
        {{ first_timestamp }} as first_prediction_at,
        {{ last_timestamp }} as last_prediction_at,
        count(*) as n
    from source
    group by all

)

select * from final
