-- join_report: one row; how the inputs matched on id (ids are unique per input, so the unmatched counts are
-- differences of row counts) and how many matched people lack each attribute.
with matched as (

    select * from matched

),

final as (

    select
        count(*) as matched,
        $n_predictions - count(*) as predictions_without_labels,
        $n_labels - count(*) as labels_without_predictions,
        count(*) filter (where not has_attributes) as people_without_attributes,
        {{ missing_counts }}
    from matched

)

select * from final
