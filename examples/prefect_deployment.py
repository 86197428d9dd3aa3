"""Deploy fairgate's audit flow from Python, as part of your own Prefect project.

``fairgate deploy`` registers fairgate's standard deployments (nightly, on-registration, on-demand). When your
platform keeps its deployments in code, deploy the flow yourself: ``flows.audit.fairness_audit`` is an ordinary
Prefect flow, imported by module path from the installed package (so the worker needs no checkout).

    PREFECT_API_URL=http://127.0.0.1:4200/api python examples/prefect_deployment.py \
        --policy policy.yaml --predictions preds.parquet --labels labels.parquet --attributes attrs.parquet \
        --model credit --model-version 7 --out /srv/fairness --run-now

Then a worker runs it: ``prefect worker start --pool fairgate``. Every path is made absolute: a process worker
runs each flow run in a temporary folder of its own.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefect.deployments import run_deployment
from prefect.types.entrypoint import EntrypointType

from flows.audit import fairness_audit
from flows.deployments import check_api, ensure_work_pool


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for role in ("policy", "predictions", "labels", "attributes"):
        parser.add_argument(f"--{role}", required=True, type=Path)
    parser.add_argument("--model", required=True, help="the audited model's name, recorded with every run")
    parser.add_argument("--model-version", required=True, help="its version (a run parameter may override it)")
    parser.add_argument("--out", type=Path, default=Path("fairness_reports"), help="reports and the audit trail")
    parser.add_argument("--name", default="weekly", help="the deployment's name (fairness-audit/NAME)")
    parser.add_argument("--pool", default="fairgate", help="a process work pool (created if missing)")
    parser.add_argument("--cron", default="0 3 * * 1", help="the schedule (default: Mondays 03:00 UTC)")
    parser.add_argument("--run-now", action="store_true", help="also start one run now (a worker picks it up)")
    args = parser.parse_args(argv)

    print(f"Prefect API: {check_api()}")  # a DeployError saying how to start a server when there is none
    print(f"work pool {args.pool!r}: {ensure_work_pool(args.pool)}")
    parameters = {
        "policy": str(args.policy.resolve()),
        "predictions": str(args.predictions.resolve()),
        "labels": str(args.labels.resolve()),
        "attributes": str(args.attributes.resolve()),
        "out_dir": str(args.out.resolve()),
        "model_name": args.model,
        "model_version": args.model_version,
    }
    deployment = fairness_audit.to_deployment(
        name=args.name,
        work_pool_name=args.pool,
        entrypoint_type=EntrypointType.MODULE_PATH,  # flows.audit:fairness_audit from the installed package
        cron=args.cron,
        parameters=parameters,
        tags=["fairness"],
        description=f"Fairness audit of {args.model} against {args.policy.name}.",
    )
    deployment_id = deployment.apply()
    print(f"deployment fairness-audit/{args.name}: {deployment_id} (cron '{args.cron}')")
    if args.run_now:
        run = run_deployment(f"fairness-audit/{args.name}", timeout=0)  # scheduled now; do not wait for it
        print(f"flow run {run.id}: {run.state_name}; start a worker: prefect worker start --pool {args.pool}")


if __name__ == "__main__":
    main()
