-- demo_predictions: one row per COMPAS screening (id): the risk score as a probability-like score and the
-- "flagged" prediction (score_text Medium or High), as ProPublica analysed it, dated by its screening date
-- (the optional timestamp column: the report's data window and the model card's evaluation window).
with compas as (

    select * from compas_raw

),

final as (

    select
        id,
        decile_score / 10.0 as score,
        cast(score_text in ('Medium', 'High') as integer) as y_pred,
        cast(compas_screening_date as date) as timestamp
    from compas

)

select * from final
