-- joined: one row per person with both a prediction and a label (ids are unique per input, validated before),
-- with their attributes when the attributes input has them (has_attributes false otherwise).
-- Values are still as given (the weight column from the input holding it); aligned casts them.
with predictions as (

    select * from stg_predictions

),

labels as (

    select * from stg_labels

),

attributes as (

    select *, true as has_attributes from stg_attributes

),

final as (

    select
        predictions.id,
        labels.{{ y_true_column }},
        predictions.{{ y_pred_column }},
        predictions.{{ score_column }}{{ ranking_columns }}{{ weight_column }},
        coalesce(attributes.has_attributes, false) as has_attributes,
        {{ attribute_columns }}
    from predictions
    inner join labels on predictions.id = labels.id
    left join attributes on predictions.id = attributes.id

)

select * from final
