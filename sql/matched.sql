-- matched: one row per person with both a prediction and a label, values cast to what the engine reads.
-- Labels and predictions become 0/1 integers (validated binary before: a cast for numeric and boolean
-- inputs, a text match for text ones like "true"); y_pred comes from score >= $decision_threshold when the
-- input has no y_pred column. Other tasks (multiclass, regression, ranking) keep y_true and y_pred as given and
-- have no fallback. The weight column (when an input holds one; validated finite and >= 0) becomes a double.
-- Label, prediction and score keep the policy's names from the staged inputs (the names the engine reads), so
-- no step renames them. Missing attribute values stay null here: join_report counts them, and aligned applies
-- each attribute's missing-value rule.
with joined as (

    select * from joined

),

final as (

    select
        id,
        {{ y_true_value }} as {{ y_true_column }},
        coalesce({{ y_pred_value }}, {{ y_pred_fallback }}) as {{ y_pred_column }},
        cast({{ score_column }} as double) as {{ score_column }}{{ ranking_columns }}{{ weight_value }},
        has_attributes,
        {{ attribute_columns }}
    from joined

)

select * from final
