-- demo_multiclass_labels: one row per COMPAS screening (id): the observed outcome within two years on the tiers'
-- ordered scale. Low: no new offence within two years (two_year_recid = 0, ProPublica's outcome); High: a violent
-- offence within two years of the screening (is_violent_recid, vr_offense_date at most 730 days after it);
-- Medium: any other new offence within two years. The most serious outcome is the top tier, as in the tiers.
with compas as (

    select * from compas_raw

),

final as (

    select
        id,
        case
            when two_year_recid = 0 then 'Low'
            when is_violent_recid = 1
                and datediff('day', compas_screening_date, vr_offense_date) between 0 and 730 then 'High'
            else 'Medium'
        end as outcome_tier
    from compas

)

select * from final
