,
        -- cube_weight_sums: the weight sums of sql/cube_cells.sql's cells, placed after its other sums when
        -- the rows carry weights (a weight column, or the proxy's per-person weights)
        coalesce(sum(__weight), 0.0) as __weight,
        coalesce(sum(__weight * __weight), 0.0) as __weight_sq,
        coalesce(sum(__weight * __person_weight), 0.0) as __person_sq,
        count(*) filter (where __weight is null or not isfinite(__weight) or __weight < 0) as __bad_weights
