-- aligned: one row per person with both a prediction and a label: the rows the audit judges.
-- Labels and predictions become 0/1 integers (validated binary before); y_pred comes from
-- score >= $decision_threshold when the input has no y_pred column. A missing attribute value is kept as
-- the attribute's unknown group or the row is left out, as the policy says per attribute.
with joined as (

    select * from joined

),

matched as (

    select * from joined
    where has_prediction and has_label

),

final as (

    select
        id,
        cast(lower(cast(y_true as varchar)) in ('1', '1.0', 'true') as tinyint) as y_true,
        coalesce(
            cast(lower(cast(y_pred as varchar)) in ('1', '1.0', 'true') as tinyint),
            cast(score >= $decision_threshold as tinyint)
        ) as y_pred,
        cast(score as double) as score,
        {{ attribute_values }}
    from matched
    where {{ missing_filter }}

)

select * from final
