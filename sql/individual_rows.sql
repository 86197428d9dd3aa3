-- individual_rows: one row per audited person, in id order (the order the neighbour index is built in, as
-- AIF360 builds it over its dataset's rows): the decision (0/1), the sensitive attributes as aligned, the
-- features (f0, f1, ...) and, when given, the counterfactual decision.
with audited as (

    select * from audited_people

),

features as (

    select * from stg_features

),

final as (

    select
        audited.id,
        audited.decision,
        {{ attribute_columns }},
        {{ feature_columns }},
        {{ counterfactual_decision }} as counterfactual_decision
    from audited
    inner join features using (id)
    {{ counterfactual_join }}
    order by audited.id

)

select * from final
