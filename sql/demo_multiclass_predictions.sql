-- demo_multiclass_predictions: one row per COMPAS screening (id): the risk tier itself (score_text Low, Medium,
-- High) as the predicted class of a multiclass audit.
with compas as (

    select * from compas_raw

),

final as (

    select
        id,
        score_text as risk_tier
    from compas

)

select * from final
