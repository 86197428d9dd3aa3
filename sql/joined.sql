-- joined: one row per id seen in the predictions or the labels (ids are unique per input, validated before).
-- Keeps every id with flags saying which inputs hold it, so that the join report and the aligned rows
-- come from one join.
with predictions as (

    select * from stg_predictions

),

labels as (

    select * from stg_labels

),

attributes as (

    select *, true as has_attributes from stg_attributes

),

predictions_and_labels as (

    select
        coalesce(predictions.id, labels.id) as id,
        predictions.id is not null as has_prediction,
        labels.id is not null as has_label,
        labels.y_true,
        predictions.y_pred,
        predictions.score
    from predictions
    full outer join labels on predictions.id = labels.id

),

final as (

    select
        predictions_and_labels.*,
        coalesce(attributes.has_attributes, false) as has_attributes,
        {{ attribute_columns }}
    from predictions_and_labels
    left join attributes on predictions_and_labels.id = attributes.id

)

select * from final
