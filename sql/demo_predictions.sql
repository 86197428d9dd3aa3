-- demo_predictions: one row per COMPAS screening (id): the risk score as a probability-like score and the
-- "flagged" prediction (score_text Medium or High), as ProPublica analysed it.
with compas as (

    select * from compas_raw

),

final as (

    select
        id,
        decile_score / 10.0 as score,
        cast(score_text in ('Medium', 'High') as integer) as y_pred
    from compas

)

select * from final
