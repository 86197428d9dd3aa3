-- unweighted_rows: the matched rows an audit keeps (missing attribute values allowed only where the policy keeps
-- them as the unknown group) whose weight is null: people without a row in the input holding the weights.
with matched as (

    select * from ({{ relation }})

),

final as (

    select count(*) as unweighted
    from matched
    where {{ weight_column }} is null
        {{ kept_rows }}

)

select * from final
