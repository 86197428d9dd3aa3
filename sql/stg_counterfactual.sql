-- stg_counterfactual: one row per row of the counterfactual input (the model's decisions with the sensitive
-- attribute flipped): id, and the decision under the contract's name y_pred, from score >= $decision_threshold
-- when the input has only a score.
with source as (

    select * from src_counterfactual

),

final as (

    select
        {{ id_column }} as id,
        {{ decision }} as y_pred
    from source

)

select * from final
