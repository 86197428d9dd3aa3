-- join_report: one row; how the inputs matched on id, and how many matched people lack each attribute.
with joined as (

    select * from joined

),

final as (

    select
        count(*) filter (where has_prediction and has_label) as matched,
        count(*) filter (where has_prediction and not has_label) as predictions_without_labels,
        count(*) filter (where has_label and not has_prediction) as labels_without_predictions,
        count(*) filter (where has_prediction and has_label and not has_attributes) as people_without_attributes,
        {{ missing_counts }}
    from joined

)

select * from final
