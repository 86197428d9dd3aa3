-- period_rows: one row per prediction: its id and the first day of the monitoring period (day, or the ISO
-- week starting Monday) its timestamp falls in. Null or unparseable timestamps stay null (counted and refused
-- by the caller with the column's name).
with source as (

    select * from src_predictions

),

final as (

    select
        {{ id_column }} as id,
        cast(date_trunc({{ unit }}, try_cast({{ timestamp_column }} as timestamp)) as date) as period_start
    from source

)

select * from final
