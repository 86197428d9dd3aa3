-- demo_law_predictions: one row per held-out law student (id): the model's predicted first-year average.
with audited as (

    select * from law_audit

),

final as (

    select
        id,
        y_pred
    from audited

)

select * from final
