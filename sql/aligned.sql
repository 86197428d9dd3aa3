-- aligned: one row per person with both a prediction and a label: the rows the audit judges.
-- Labels and predictions become 0/1 integers (validated binary before: a cast for numeric and boolean
-- inputs, a text match for text ones like "true"); y_pred comes from
-- score >= $decision_threshold when the input has no y_pred column. Missing attribute values stay null here;
-- the align task then leaves those people out or names their group, as the policy says per attribute.
with joined as (

    select * from joined

),

final as (

    select
        id,
        {{ y_true_value }} as y_true,
        coalesce({{ y_pred_value }}, cast(score >= $decision_threshold as tinyint)) as y_pred,
        cast(score as double) as score,
        has_attributes,
        {{ attribute_columns }}
    from joined

)

select * from final
