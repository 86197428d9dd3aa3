-- aligned: the rows the audit judges: the matched rows with each sensitive attribute's missing-value rule
-- applied (missing: unknown names the group with the attribute's unknown_label, bound as a parameter;
-- missing: exclude leaves the person out). The columns are the engine's: id, the policy's label, prediction
-- (and score) columns, the attributes and the columns the proxy reads.
with matched as (

    select * from matched

),

final as (

    select
        {{ columns }}
    from matched
    where {{ kept }}

)

select * from final
