#!/usr/bin/env bash
# A CI gate: audit the model's predictions against the fairness policy and let the exit code decide the job.
#
#   examples/ci_gate.sh POLICY PREDICTIONS LABELS ATTRIBUTES [OUT]
#
# MODEL and MODEL_VERSION (environment) name the audited model in the trail and the report, e.g. the commit:
#   MODEL=credit MODEL_VERSION="$CI_COMMIT_SHORT_SHA" examples/ci_gate.sh policy.yaml preds.csv labels.csv attrs.csv
#
# fairgate audit exits 0 pass, 1 fail, 2 invalid input or configuration, 3 an internal error, 4 nothing could be
# judged (0 under the policy's ci_cd_gate.insufficient: allow). This script passes the code on, so the CI job
# fails unless the audit passes, and says why in one line. The reports (JSON, JUnit XML for the CI's test view,
# HTML, PDF: the policy's reporting.format) and the trail are in OUT, to keep as the job's artifacts.
set -uo pipefail

if [ $# -lt 4 ]; then
    echo "usage: $0 POLICY PREDICTIONS LABELS ATTRIBUTES [OUT]" >&2
    exit 2
fi
policy=$1 predictions=$2 labels=$3 attributes=$4 out=${5:-fairness_reports}

fairgate audit --policy "$policy" --predictions "$predictions" --labels "$labels" --attributes "$attributes" \
    --out "$out" --model "${MODEL:-model}" --model-version "${MODEL_VERSION:-unversioned}" --quiet
code=$?

case $code in
    0) echo "fairness gate: PASS (reports in $out)" ;;
    1) echo "fairness gate: FAIL: the model breaches the policy; see the report in $out" ;;
    2) echo "fairness gate: not run: invalid input or configuration (the error line above says what to fix)" ;;
    4) echo "fairness gate: INSUFFICIENT: nothing could be judged (too few people per group); see $out" ;;
    *) echo "fairness gate: fairgate itself failed (exit $code): a bug, please report it" ;;
esac
exit "$code"
