#!/usr/bin/env bash
# Checks the Helm chart charts/proofpipe, failing loudly on the first problem:
#  1. installs its tools from PyPI into .chart-tools/ (git-ignored): helm-python-sdk (the
#     Helm v4 SDK as a shared library, no helm binary), kubernetes-validate (Kubernetes
#     JSON schemas, offline), the kubernetes client and PyYAML;
#  2. drift: the chart's CRDs, the chart's dashboard and docs/api-reference.md against their
#     sources; every metric the dashboard queries is one the code registers;
#  3. values.schema.json closes every object (additionalProperties); values it must refuse
#     are refused; charts/proofpipe/README.md's values reference is what
#     scripts/chart-values-doc.py generates from the schema (a description for every key) and
#     values.yaml; the parameter claim's default size holds what scripts/chart-params-size.py
#     computes for the default sizes and kinds;
#  4. `helm lint --strict` and `helm template` with the default values, with every optional
#     toggle on (the gateway and the parameter Job included), watching one namespace, with
#     the gateway serving without a token, with docs/quickstart-filecoin.md's values and with
#     the chart README's example; values that the templates must refuse are refused;
#  5. every rendered object (and the CRDs, and the example ProverPool) against the
#     Kubernetes 1.36 schemas, strict; CRD-typed objects against their CRD's schema, or
#     skipped with the reason; the PrometheusRule's alerts (promtool is not installed: a
#     small PromQL reader, metrics the code registers or kube-state-metrics exports, a
#     summary, description and runbook_url naming a section of docs/operating.md each, the
#     alerts the values call for, on the objects rendered, the code they stand on); the
#     operator's, the gateway's and the parameter Job's hardening, the operator's and the
#     gateway's probes and RBAC
#     (a comment on every rule, least privilege, the operator holds what it grants the
#     provers, the gateway exactly what gateway/src calls for);
#  6. with KUBECONFIG set: server-side applies the rendered objects to that API server
#     (meant for a scratch one such as kube-testenv), reads each back to check nothing was
#     dropped, dry-runs the example ProverPool (CEL rules included), then deletes them.
# Usage: scripts/chart-check.sh            (CHART_CHECK_APPLY=0 skips step 6)
set -euo pipefail
cd "$(dirname "$0")/.."

tools=.chart-tools
requirements="helm-python-sdk==0.2.2 kubernetes-validate==1.37.0 kubernetes==37.0.2 PyYAML==6.0.4"
if [ "$(cat "$tools/installed" 2>/dev/null)" != "$requirements" ]; then
  echo "chart-check: installing $requirements into $tools/venv"
  rm -rf "$tools"
  python3 -m venv "$tools/venv"
  # shellcheck disable=SC2086
  "$tools/venv/bin/pip" install --quiet --disable-pip-version-check $requirements
  echo "$requirements" >"$tools/installed"
fi

CHART_CHECK_PASSED=1 exec "$tools/venv/bin/python" - <<'PYTHON'
import copy
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import helm_python as helm
import kubernetes_validate
import yaml

CHART = Path("charts/proofpipe")
KUBE_VERSION = "1.36.0"  # kube-testenv's version
NAMESPACE = "proofpipe-system"
started = time.monotonic()
checked = int(os.environ["CHART_CHECK_PASSED"])  # the checks above, in bash


def fail(message):
    print(f"chart-check: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def ok(message):
    global checked
    checked += 1
    print(f"ok  {message}")


# ---- 2. drift -------------------------------------------------------------------------
def same_file(copy_path, source, fix):
    if Path(copy_path).read_bytes() != Path(source).read_bytes():
        fail(f"{copy_path} differs from {source}: {fix}")
    ok(f"{copy_path} equals {source}")


same_file(CHART / "crds/proofpipe-crds.yaml", "crds/proofpipe-crds.yaml",
          "cp crds/proofpipe-crds.yaml charts/proofpipe/crds/")
same_file(CHART / "dashboards/proofpipe.json", "dashboards/proofpipe.json",
          "cp dashboards/proofpipe.json charts/proofpipe/dashboards/")
if subprocess.run([sys.executable, "scripts/gen-api-reference.py", "--check",
                   "docs/api-reference.md"]).returncode != 0:
    fail("docs/api-reference.md is not what scripts/gen-api-reference.py generates")
ok("docs/api-reference.md is generated from crds/proofpipe-crds.yaml")


def registered_metrics():
    """Every metric name the code registers: string literals given to prometheus'
    constructors, the operator's behind its registry prefix."""
    names = set()
    sources = {
        "pipeline/src/metrics.rs": "",
        "pipeline/src/pipeline/tracker.rs": "",
        "daemon/src/metrics.rs": "",
        "operator/src/runtime/metrics.rs": "proofpipe_operator_",
        "gateway/src/metrics.rs": "proofpipe_gateway_",
    }
    for path, prefix in sources.items():
        text = Path(path).read_text()
        if prefix:
            assert f'Some("{prefix[:-1]}".into())' in text, f"{path} no longer uses the prefix {prefix}"
        for match in re.finditer(r'(?:Opts::new|HistogramOpts::new|IntGauge::new|IntCounter::new)\(\s*"([a-z_]+)"', text):
            names.add(prefix + match.group(1))
    return names


registered = registered_metrics()
if len(registered) < 15:
    fail(f"found only {len(registered)} registered metrics in the code: the scan is broken")
dashboard = json.loads(Path("dashboards/proofpipe.json").read_text())
queried = set()
for panel in dashboard["panels"]:
    for target in panel.get("targets", []):
        expr = re.sub(r"\{[^}]*\}", "", target["expr"])  # label matchers
        expr = re.sub(r"\b(by|without)\s*\([^)]*\)", "", expr)  # grouping labels
        for name in re.findall(r"\bproofpipe_[a-z_]+", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            if name not in registered and base not in registered:
                fail(f"dashboard panel '{panel['title']}' queries {name}, which no code registers")
            queried.add(base if base in registered else name)
if not queried:
    fail("the dashboard queries no metric")
ok(f"dashboard queries {len(queried)} metrics, all registered by the code "
   f"(unused: {', '.join(sorted(registered - queried)) or 'none'})")

# ---- 3. values schema -----------------------------------------------------------------
schema = json.loads((CHART / "values.schema.json").read_text())


def closed(node, path):
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node:
            if "additionalProperties" not in node:
                fail(f"values.schema.json {path or '/'}: an object without additionalProperties")
            if "properties" in node and node["additionalProperties"] is not False:
                fail(f"values.schema.json {path}: fixed properties but additionalProperties is not false")
        for key, value in node.items():
            closed(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            closed(value, f"{path}/{index}")


closed(schema, "")
defaults = yaml.safe_load((CHART / "values.yaml").read_text())
missing = set(defaults) ^ set(schema["properties"])
if missing:
    fail(f"values.yaml and values.schema.json disagree on top-level keys: {sorted(missing)}")
ok("values.schema.json closes every object and covers every key of values.yaml")

# The chart README's values reference, generated from the schema and values.yaml by a
# standard-library script whose values.yaml reader must read what PyYAML reads.
sys.path.insert(0, "scripts")
import chart_values  # noqa: E402

if chart_values.load_values() != defaults:
    fail("scripts/chart_values.py reads charts/proofpipe/values.yaml otherwise than PyYAML: "
         "keep values.yaml to the subset it reads (see its docstring), or extend it")
if subprocess.run([sys.executable, "scripts/chart-values-doc.py", "--check", str(CHART / "README.md")]).returncode:
    fail(f"{CHART / 'README.md'}: its values reference is not what scripts/chart-values-doc.py generates")
ok(f"{CHART / 'README.md'}: the values reference is generated from values.schema.json (a description "
   "for every key) and values.yaml")

# The parameter claim's default holds what the default kinds and sizes fetch (sizes from
# parameters.json's files and the committed proving-key counts), their matrices and headroom.
if subprocess.run([sys.executable, "scripts/chart-params-size.py", "--check"],
                  stdout=subprocess.DEVNULL).returncode:
    fail("paramsFetch.createPersistentVolumeClaim.size: scripts/chart-params-size.py --check failed")
ok("paramsFetch.createPersistentVolumeClaim.size holds the default parameter files, their matrices and "
   "10% headroom (scripts/chart-params-size.py)")

chart = helm.Chart.load(str(CHART))
refused = {
    "an unknown top-level key": {"replicas": 2},
    "an unknown nested key": {"image": {"tagg": "1"}},
    "running as root": {"runAs": {"user": 0, "group": 0}},
    "a bad pull policy": {"image": {"pullPolicy": "Sometimes"}},
    "a bad resource quantity": {"resources": {"limits": {"memory": "lots"}}},
    "a bad watch namespace": {"operator": {"watchNamespace": "Not_A_Namespace"}},
    "a bad admission policy action": {"proverIdentityPolicy": {"enabled": True, "validationActions": ["Block"]}},
    "an unknown log format": {"operator": {"logFormat": "yaml"}},
    "a memory ratio above 1": {"prometheusRule": {"enabled": True, "memoryRatio": 1.5}},
    "a runbook base URL that does not end in /": {"prometheusRule": {"runbookBaseUrl": "https://git.example/docs"}},
    "no prover replacements": {"prometheusRule": {"proverReplacements": 0}},
    "a bad no-leader duration": {"prometheusRule": {"noLeaderFor": "5 minutes"}},
    "an unknown gateway key": {"gateway": {"pools": "h200"}},
    "a pool for an unknown kind": {"gateway": {"poolsByKind": {"seal": "h200"}}},
    "a pool name that is not one": {"gateway": {"poolsByKind": {"winning-post": "Warm_Pool"}}},
    "a gateway artifact store of another scheme": {"gateway": {"artifacts": "http://example.com/c1"}},
    "an unknown gateway auth key": {"gateway": {"auth": {"anonymous": True}}},
    "a gateway message limit below gRPC's 4 MiB": {"gateway": {"maxMessageBytes": 1024}},
    "a negative gateway job TTL": {"gateway": {"jobTtlSeconds": -1}},
    "an unknown gateway log format": {"gateway": {"logFormat": "yaml"}},
    "a relative artifact mount path": {"gateway": {"artifactVolume": {"claimName": "c1", "mountPath": "artifacts"}}},
    "a bad gateway network peer": {"gateway": {"networkPolicy": {"enabled": True, "grpcFrom": [{"namespace": "curio"}]}}},
    "an unknown parameter Job key": {"paramsFetch": {"sectorSize": "32GiB"}},
    "a sector size Filecoin does not have": {"paramsFetch": {"sectorSizes": ["16GiB"]}},
    "an unknown proof kind": {"paramsFetch": {"kinds": ["post"]}},
    "no proof kind": {"paramsFetch": {"kinds": []}},
    "a parameter base URL of another scheme": {"paramsFetch": {"baseUrl": "ipfs://bafy"}},
    "a parameter mirror of another scheme": {"paramsFetch": {"mirrors": ["ipfs://bafy"]}},
    "a bad parameter claim name": {"paramsFetch": {"persistentVolumeClaim": "Params_32"}},
}
for why, values in refused.items():
    try:
        chart.render(values=values, name="proofpipe", namespace=NAMESPACE)
    except helm.HelmError as error:
        if "schema" not in str(error) and "additional properties" not in str(error):
            fail(f"values with {why} failed for another reason than the schema: {error}")
        continue
    fail(f"values.schema.json accepted {why}: {values}")
ok(f"values.schema.json refuses {len(refused)} kinds of bad values")

# Gateway values that depend on each other, which the schema cannot see: the templates
# refuse them with a message naming the fix.
gateway_on = {"enabled": True, "pool": "h200", "artifacts": "s3://proofs/c1"}
refused_by_templates = {
    "a gateway without a pool": ({"gateway": {**gateway_on, "pool": ""}}, "gateway.pool is required"),
    "a gateway without an artifact store": ({"gateway": {**gateway_on, "artifacts": ""}},
                                            "gateway.artifacts is required"),
    "file:// artifacts without a volume": ({"gateway": {**gateway_on, "artifacts": "file:///artifacts/c1"}},
                                           "gateway.artifactVolume.claimName"),
    "file:// artifacts outside the volume": (
        {"gateway": {**gateway_on, "artifacts": "file:///elsewhere",
                     "artifactVolume": {"claimName": "c1", "mountPath": "/artifacts"}}},
        "is not under gateway.artifactVolume.mountPath"),
    "a gateway without a token and without named callers": (
        {"gateway": {**gateway_on, "auth": {"allowUnauthenticated": True}}}, "gateway.networkPolicy.grpcFrom"),
    "gateway jobs in a namespace the operator does not watch": (
        {"operator": {"watchNamespace": "proving"}, "gateway": gateway_on}, "the operator watches only proving"),
    "a parameter Job without a claim": ({"paramsFetch": {"enabled": True}},
                                        "paramsFetch.persistentVolumeClaim is required when paramsFetch.enabled"),
    "a parameter claim to create without a name": (
        {"paramsFetch": {"enabled": True, "createPersistentVolumeClaim": {"enabled": True}}},
        "paramsFetch.persistentVolumeClaim is required when paramsFetch.enabled"),
}
for why, (values, message) in refused_by_templates.items():
    try:
        chart.render(values=values, name="proofpipe", namespace=NAMESPACE)
    except helm.HelmError as error:
        if message not in str(error):
            fail(f"values with {why} failed without the expected message ({message!r}): {error}")
        continue
    fail(f"the chart rendered values with {why}: {values}")
ok(f"the templates refuse {len(refused_by_templates)} kinds of inconsistent gateway and parameter Job values, "
   "naming the fix")

# ---- 4. lint and render ---------------------------------------------------------------
peer = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
curio = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "curio"}},
         "podSelector": {"matchLabels": {"app": "curio"}}}
scenarios = {
    "default": {},
    "every-toggle-on": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        "podMonitor": {"enabled": True, "namespaces": ["proving"], "labels": {"release": "prometheus"}},
        "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}, "noReadyProverFor": "20m",
                           "memoryRatio": 0.85},
        "operator": {"logFormat": "json"},
        "networkPolicy": {"enabled": True, "metricsFrom": [peer], "apiServerCidrs": ["10.0.0.1/32"]},
        "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
        "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "proofpipe"}},
        "podAnnotations": {"example.com/team": "proving"},
        "podLabels": {"team": "proving"},
        "priorityClassName": "system-cluster-critical",
        "imagePullSecrets": [{"name": "registry"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "serviceAccount": {"create": True, "name": "", "annotations": {"example.com/role": "none"}},
        # Bearer token generated by the chart, TLS, S3 artifacts with credentials from a Secret.
        "gateway": {
            "enabled": True, "pool": "h200", "artifacts": "s3://proofs/c1", "replicas": 3,
            "poolsByKind": {"winning-post": "post-warm", "window-post": "post-warm"},
            "envFrom": [{"secretRef": {"name": "artifacts-s3"}}],
            "extraEnv": [{"name": "AWS_REGION", "value": "us-east-1"},
                         {"name": "AWS_ENDPOINT", "valueFrom": {"configMapKeyRef": {"name": "s3", "key": "endpoint"}}}],
            "tls": {"secretName": "gateway-tls"},
            "networkPolicy": {"enabled": True, "grpcFrom": [curio], "metricsFrom": [peer]},
            "maxMessageBytes": 134217728, "jobTtlSeconds": 600, "backoffLimit": 5,
            "service": {"type": "ClusterIP", "port": 9820, "metricsPort": 9821,
                        "annotations": {"example.com/lb": "internal"}},
            "logLevel": "info,proofpipe_gateway=debug", "logFormat": "json",
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
            "podAnnotations": {"example.com/team": "proving"},
        },
        # The parameter Job with the claim it fills created by the chart, the defaults'
        # sector size and kinds.
        "paramsFetch": {
            "enabled": True, "persistentVolumeClaim": "filecoin-proof-parameters",
            "createPersistentVolumeClaim": {"enabled": True, "storageClassName": "nfs-client", "size": "256Gi",
                                            "accessModes": ["ReadWriteMany"]},
            "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy.example:3128"}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
            "podAnnotations": {"example.com/team": "proving"},
        },
    },
    "one-namespace": {
        "operator": {"watchNamespace": "proving", "logLevel": "debug", "port": 9090},
        # The alerts scoped to the watched namespace, their runbooks under a web address.
        "prometheusRule": {"enabled": True, "runbookBaseUrl": "https://git.example/proofpipe/blob/main/",
                           "proverReplacements": 3, "noLeaderFor": "2m"},
        "podAntiAffinity": "hard",
        "podDisruptionBudget": {"enabled": False},
        "replicaCount": 3,
        "image": {"tag": "0.1.0-test", "pullPolicy": "Always"},
        "proverIdentityPolicy": {"enabled": False, "validationActions": ["Deny"]},
        # In the watched namespace, a token of an existing Secret, file:// artifacts on a PVC
        # the provers mount too, no NetworkPolicy.
        "gateway": {
            "enabled": True, "namespace": "proving", "pool": "h200", "artifacts": "file:///artifacts/c1",
            "artifactVolume": {"claimName": "proofpipe-artifacts", "mountPath": "/artifacts"},
            "auth": {"token": {"existingSecret": "curio-token", "key": "bearer"}},
            "networkPolicy": {"enabled": False}, "podAntiAffinity": "hard", "replicas": 1,
            "image": {"repository": "registry.example/proofpipe-gateway", "tag": "0.1.0-test",
                      "pullPolicy": "Always"},
        },
        # The parameter Job in the pool's namespace, filling an existing claim, from a mirror
        # (a trailing slash), two sizes and two kinds, the PoRep matrices recorded too, removed a
        # day after it finishes.
        "paramsFetch": {
            "enabled": True, "namespace": "proving", "persistentVolumeClaim": "filecoin-proof-parameters",
            "baseUrl": "https://params.example/filecoin/", "sectorSizes": ["2KiB", "32GiB"],
            "mirrors": ["https://mirror-a.example/params/", "s3://params-b/filecoin"],
            "kinds": ["porep", "snap"], "porepMatrices": True, "backoffLimit": 10, "ttlSecondsAfterFinished": 86400,
            "image": {"repository": "registry.example/proofpipe-prover", "tag": "0.1.0-cuda13.0",
                      "pullPolicy": "Always"},
        },
    },
    # What curio can call today: no token, so the NetworkPolicy names the callers.
    "gateway-unauthenticated": {
        "prometheusRule": {"enabled": True},
        "gateway": {
            "enabled": True, "pool": "h200", "artifacts": "s3://proofs",
            "auth": {"allowUnauthenticated": True},
            "networkPolicy": {"enabled": True, "grpcFrom": [curio, {"ipBlock": {"cidr": "10.20.0.0/16"}}]},
            # curio outside the cluster: a load balancer only its nodes reach.
            "service": {"type": "LoadBalancer", "port": 9820, "metricsPort": 9821,
                        "loadBalancerSourceRanges": ["203.0.113.0/28"]},
        },
    },
}
# docs/quickstart-filecoin.md's values (its one `e2e:values` block), as a reader installs
# them: rendered, checked and applied like the others.
QUICKSTART = Path("docs/quickstart-filecoin.md")
quickstart_values = re.findall(r"^```yaml e2e:values\n(.*?)^```", QUICKSTART.read_text(), re.S | re.M)
if len(quickstart_values) != 1:
    fail(f"{QUICKSTART}: expected one ```yaml e2e:values block, found {len(quickstart_values)}")
scenarios["quickstart-filecoin"] = yaml.safe_load(quickstart_values[0])
# The chart README's example values (its one `values-example` block), as a provider copies them.
README = CHART / "README.md"
readme_values = re.findall(r"^```yaml values-example\n(.*?)^```", README.read_text(), re.S | re.M)
if len(readme_values) != 1:
    fail(f"{README}: expected one ```yaml values-example block, found {len(readme_values)}")
scenarios["readme-example"] = yaml.safe_load(readme_values[0])
# The prover-identity ValidatingAdmissionPolicies (on by default, ADR 0014).
POLICY_KINDS = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
expected_kinds = {
    "default": {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                "Deployment", "Service", "PodDisruptionBudget"} | POLICY_KINDS,
    "every-toggle-on": {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                        "Deployment", "Service", "PodDisruptionBudget", "ServiceMonitor",
                        "PodMonitor", "PrometheusRule", "NetworkPolicy", "ConfigMap", "Secret",
                        "Job", "PersistentVolumeClaim"} | POLICY_KINDS,
    "one-namespace": {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                      "Deployment", "Service", "Job", "PrometheusRule"},
    "quickstart-filecoin": {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                            "Deployment", "Service", "PodDisruptionBudget", "Secret", "Job", "NetworkPolicy",
                            "PersistentVolumeClaim"} | POLICY_KINDS,
    "readme-example": {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                       "Deployment", "Service", "PodDisruptionBudget", "ServiceMonitor", "PodMonitor",
                       "PrometheusRule", "NetworkPolicy", "Job", "PersistentVolumeClaim"} | POLICY_KINDS,
    "gateway-unauthenticated": {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                                "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy",
                                "PrometheusRule"} | POLICY_KINDS,
}


def render(values, namespace=NAMESPACE):
    """(objects, {template: text}) of the chart rendered with `values`."""
    manifests = chart.render(values=values, name="proofpipe", namespace=namespace,
                             is_install=True)
    objects = []
    for template, text in sorted(manifests.items()):
        if template.endswith("NOTES.txt"):
            if not text.strip():
                fail("NOTES.txt renders empty")
            continue
        for document in yaml.safe_load_all(text):
            if document:
                document.setdefault("metadata", {})
                objects.append(document)
    return objects, manifests


rendered = {}
for scenario, values in scenarios.items():
    report = helm.lint(str(CHART), values, strict=True, namespace=NAMESPACE,
                       kube_version=f"v{KUBE_VERSION}")
    problems = [m for m in report.get("messages", []) if m["severity"] >= 2] + report.get("errors", [])
    if problems:
        fail(f"helm lint --strict ({scenario}): {problems}")
    objects, manifests = render(values)
    kinds = {o["kind"] for o in objects}
    if kinds != expected_kinds[scenario]:
        fail(f"helm template ({scenario}) rendered kinds {sorted(kinds)}, expected {sorted(expected_kinds[scenario])}")
    rendered[scenario] = (objects, manifests)
    ok(f"helm lint --strict and helm template ({scenario}): {len(objects)} objects")

# The prover-identity policies: the expressions of policies/prover-identity.yaml (which
# operator/tests/prover_identity.rs evaluates), each policy bound, failing closed.
identity = yaml.safe_load((CHART / "policies/prover-identity.yaml").read_text())
objects, _ = rendered["default"]
policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
bindings = {o["spec"]["policyName"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"}
wanted = {"proofjobs/status": identity["proofJobStatus"], "proverpools/status": identity["proverPoolStatus"]}
for name, policy in policies.items():
    spec = policy["spec"]
    resource = spec["matchConstraints"]["resourceRules"][0]["resources"][0]
    if spec["failurePolicy"] != "Fail" or spec["matchConditions"] != identity["matchConditions"]:
        fail(f"policy {name}: failurePolicy Fail and the prover match conditions are required")
    if [v["expression"] for v in spec["validations"]] != [v["expression"] for v in wanted.pop(resource)]:
        fail(f"policy {name}: its validations are not those of policies/prover-identity.yaml")
    if bindings.get(name, {}).get("spec", {}).get("validationActions") != ["Deny"]:
        fail(f"policy {name} is not bound with validationActions [Deny] by default")
if wanted:
    fail(f"no policy for {sorted(wanted)}")
ok(f"prover-identity policies: {len(policies)} bound, failing closed, expressions as tested")

crds = [d for d in yaml.safe_load_all((CHART / "crds/proofpipe-crds.yaml").read_text()) if d]
crd_by_kind = {c["spec"]["names"]["kind"]: c for c in crds}
# The H200 pool first: the dry-run's broken copy is made from it.
example_paths = [CHART / "examples/prover-pool-h200.yaml", CHART / "examples/prover-pool-2kib.yaml"]
if sorted(example_paths) != sorted((CHART / "examples").glob("*.yaml")):
    fail(f"examples: check {sorted((CHART / 'examples').glob('*.yaml'))}, not only {example_paths}")
examples = [d for path in example_paths for d in yaml.safe_load_all(path.read_text()) if d]
example_path = ", ".join(str(path) for path in example_paths)

# ---- 5. schemas, hardening, RBAC ------------------------------------------------------
def crd_schema_validate(obj):
    """Validates a proofpipe object against its CRD's structural schema (the API server
    adds defaults and CEL, which the dry-run in step 6 covers)."""
    import jsonschema
    crd = crd_by_kind[obj["kind"]]
    version = next(v for v in crd["spec"]["versions"] if f"{crd['spec']['group']}/{v['name']}" == obj["apiVersion"])
    root = copy.deepcopy(version["schema"]["openAPIV3Schema"])

    def close(node):  # structural schemas prune unknown fields; refuse them here instead
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)
    close(root)
    root["properties"]["metadata"] = {"type": "object"}
    root["properties"]["apiVersion"] = {"type": "string"}
    root["properties"]["kind"] = {"type": "string"}
    errors = sorted(jsonschema.Draft7Validator(root).iter_errors(obj), key=str)
    if errors:
        fail(f"{obj['kind']} {obj['metadata'].get('name')}: " + "; ".join(
            f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors))


SKIPPED_KINDS = {
    "monitoring.coreos.com/v1": "Prometheus Operator CRD; its schema is not available offline "
                                "(checked here: selector and endpoints, or the rules' shape and metrics)",
}


# Metrics of kube-state-metrics (its docs/metrics: STABLE) that alerts may query, and what
# reads them; any other non-proofpipe metric in an alert fails.
KUBE_STATE_METRICS = {
    "kube_deployment_status_replicas_available": "ProofpipeGatewayUnavailable",
    "kube_deployment_spec_replicas": "ProofpipeGatewayUnavailable",
    "kube_job_failed": "ProofpipeParamsFetchFailed",
    "kube_pod_owner": "ProofpipeProverCrashLooping",
    "kube_pod_container_status_waiting_reason": "ProofpipeProverCrashLooping",
}
PROMQL_FUNCTIONS = {"sum", "max", "min", "count", "avg", "rate", "increase", "max_over_time",
                    "label_replace", "vector", "absent", "histogram_quantile"}
PROMQL_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
PROMQL_WORDS = {"and", "or", "unless", "bool", "offset"}
PROMQL_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<range>\[[0-9]+[smhdwy]\])'
                          r'|(?P<number>[0-9]+(?:\.[0-9]+)?)|(?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)'
                          r'|(?P<op>==|!=|>=|<=|=~|!~|[-+*/<>(){},=]))')


def promql_problems(expr):
    """What a small PromQL reader finds wrong in `expr` (promtool is not installed here): a
    token it does not know, unbalanced brackets, a label matcher that is not `label op
    "value"`, a function it does not know, a metric that neither the code registers nor
    kube-state-metrics exports. Returns (problems, metric names)."""
    tokens, position = [], 0
    while position < len(expr.rstrip()):
        match = PROMQL_TOKEN.match(expr, position)
        if not match:
            return [f"cannot read {expr[position:position + 20]!r}"], set()
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    problems, metrics, stack = [], set(), []
    index = 0
    while index < len(tokens):
        kind, text = tokens[index]
        following = tokens[index + 1][1] if index + 1 < len(tokens) else None
        if text in "({":
            stack.append(text)
        elif text in ")}":
            if not stack or stack.pop() != {")": "(", "}": "{"}[text]:
                problems.append(f"unbalanced {text!r}")
        if text == "{":
            # label op "value" [, ...] }
            index += 1
            while index < len(tokens) and tokens[index][1] != "}":
                part = [t for t in tokens[index:index + 3]]
                if len(part) < 3 or part[0][0] != "ident" or part[1][1] not in ("=", "!=", "=~", "!~") \
                        or part[2][0] != "string":
                    problems.append(f"bad label matcher at {' '.join(t for _, t in part)!r}")
                    break
                index += 3
                if index < len(tokens) and tokens[index][1] == ",":
                    index += 1
                elif index >= len(tokens) or tokens[index][1] != "}":
                    problems.append(f"no comma after the label matcher {' '.join(t for _, t in part)!r}")
                    break
            continue
        if kind == "ident":
            if text in PROMQL_GROUPING:
                if following == "(":
                    # the label names up to the closing bracket
                    index += 2
                    while index < len(tokens) and tokens[index][1] != ")":
                        if tokens[index][0] != "ident" and tokens[index][1] != ",":
                            problems.append(f"bad label list after {text}")
                        index += 1
                    index += 1
                    continue
            elif text in PROMQL_WORDS:
                pass
            elif text in PROMQL_FUNCTIONS:
                pass  # `count by (...) (...)` as well as `count(...)`
            elif following == "(":
                problems.append(f"unknown function {text}")
            else:
                metrics.add(text)
        index += 1
    if stack:
        problems.append(f"unclosed {''.join(stack)!r}")
    return problems, metrics


def doc_anchors(path):
    """The anchors GitHub gives the headings of a Markdown file (as scripts/docs-check.py
    makes them)."""
    anchors, seen, fence = set(), {}, False
    for line in Path(path).read_text().splitlines():
        if re.match(r"^ {0,3}(```|~~~)", line):
            fence = not fence
            continue
        heading = None if fence else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(2).strip().lower().replace("`", "")).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def check_rules(obj, where):
    """A PrometheusRule's shape; that its alerts query only metrics the code registers or
    kube-state-metrics exports, in PromQL a small reader accepts; each alert's summary,
    description and a runbook_url naming a section of docs/operating.md that exists; and the
    alerts there for this scenario's values, each on the objects the chart renders."""
    values = scenarios.get(where, {})
    rule_values = {**defaults["prometheusRule"], **values.get("prometheusRule", {})}
    alerts = {}
    for group in obj["spec"]["groups"]:
        if not group.get("name") or not group.get("rules"):
            fail(f"{where}: PrometheusRule group without a name or rules: {group}")
        for rule in group["rules"]:
            name = rule.get("alert")
            if not name or name in alerts:
                fail(f"{where}: PrometheusRule rule without an alert name, or a repeated one: {rule}")
            alerts[name] = rule
            annotations = rule.get("annotations", {})
            if not rule.get("labels", {}).get("severity") in ("warning", "critical") \
                    or not annotations.get("summary") or not annotations.get("description"):
                fail(f"{where}: alert {name} lacks a severity (warning, critical), a summary or a description")
            if "for" in rule and not re.fullmatch(r"([0-9]+(ms|s|m|h))+", str(rule["for"])):
                fail(f"{where}: alert {name} has a bad duration for: {rule['for']!r}")
            runbook = annotations.get("runbook_url", "")
            base = rule_values["runbookBaseUrl"]
            page, _, anchor = runbook[len(base):].partition("#")
            if not runbook.startswith(base) or page != "docs/operating.md" or not anchor:
                fail(f"{where}: alert {name}: runbook_url {runbook!r} is not {base}docs/operating.md#<section>")
            if anchor not in doc_anchors(page):
                fail(f"{where}: alert {name}: runbook_url {runbook!r} names no section of {page}")
            problems, names = promql_problems(rule["expr"])
            if problems:
                fail(f"{where}: alert {name}: {'; '.join(problems)} in {rule['expr']!r}")
            if not names:
                fail(f"{where}: alert {name} queries no metric")
            for metric in names:
                if metric.startswith("proofpipe_"):
                    if metric not in registered and re.sub(r"_(bucket|sum|count)$", "", metric) not in registered:
                        fail(f"{where}: alert {name} queries {metric}, which no code registers")
                elif KUBE_STATE_METRICS.get(metric) != name:
                    fail(f"{where}: alert {name} queries {metric}: neither a metric the code registers nor "
                         "a kube-state-metrics metric listed for it in KUBE_STATE_METRICS")
    # Which alerts, for these values.
    gateway_on = values.get("gateway", {}).get("enabled", False)
    params_on = values.get("paramsFetch", {}).get("enabled", False)
    wanted = {"ProofpipeNoReadyProver", "ProofpipeJobFailed", "ProofpipeProverNearMemoryLimit",
              "ProofpipeProverWithoutGpu", "ProofpipePoStWaiting", "ProofpipeGatewayErrors",
              "ProofpipeOperatorNoLeader", "ProofpipeProverCrashLooping"}
    wanted |= {"ProofpipeGatewayUnavailable"} if gateway_on else set()
    wanted |= {"ProofpipeParamsFetchFailed"} if params_on else set()
    if set(alerts) != wanted:
        fail(f"{where}: PrometheusRule has alerts {sorted(alerts)}, expected {sorted(wanted)}")
    # Each on the objects it watches, as rendered with the same values.
    objects, _ = rendered[where]

    def of_component(objects, kind, name):
        found = [o for o in objects if o["kind"] == kind
                 and (o["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == name]
        if len(found) != 1:
            fail(f"{where}: expected one {kind} of the {name}, rendered {len(found)}")
        return found[0]

    matchers = lambda alert: dict(re.findall(r'(\w+)="([^"]*)"', alerts[alert]["expr"]))
    leader = matchers("ProofpipeOperatorNoLeader")
    operator = of_component(objects, "Deployment", "operator")
    if leader.get("namespace") != operator["metadata"]["namespace"] or \
            alerts["ProofpipeOperatorNoLeader"].get("for") != rule_values["noLeaderFor"]:
        fail(f"{where}: ProofpipeOperatorNoLeader does not watch the operator's namespace "
             f"{operator['metadata']['namespace']} for noLeaderFor")
    crash = matchers("ProofpipeProverCrashLooping")
    watched = values.get("operator", {}).get("watchNamespace")
    if crash.get("owner_kind") != "ProverPool" or "ProverPool" not in crd_by_kind or \
            crash.get("namespace") != watched or \
            f">= {rule_values['proverReplacements']}" not in alerts["ProofpipeProverCrashLooping"]["expr"]:
        fail(f"{where}: ProofpipeProverCrashLooping must count pods owned by a ProverPool "
             f"(in {watched or 'any namespace'}), against proverReplacements")
    if gateway_on:
        gateway = of_component(objects, "Deployment", "gateway")["metadata"]
        found = matchers("ProofpipeGatewayUnavailable")
        if (found.get("namespace"), found.get("deployment")) != (gateway["namespace"], gateway["name"]):
            fail(f"{where}: ProofpipeGatewayUnavailable watches {found}, not the gateway Deployment "
                 f"{gateway['namespace']}/{gateway['name']}")
    if params_on:
        job = of_component(objects, "Job", "params-fetch")["metadata"]
        found = matchers("ProofpipeParamsFetchFailed")
        if (found.get("namespace"), found.get("job_name"), found.get("condition")) != (
                job["namespace"], job["name"], "true"):
            fail(f"{where}: ProofpipeParamsFetchFailed watches {found}, not the parameter Job "
                 f"{job['namespace']}/{job['name']}")
    return alerts


def validate(obj, where):
    api = obj["apiVersion"]
    if api in SKIPPED_KINDS and obj["kind"] == "PrometheusRule":
        alerts = check_rules(obj, where)
        print(f"    skip schema of {obj['kind']} {obj['metadata']['name']}: {SKIPPED_KINDS[api]}; "
              f"alerts {', '.join(sorted(alerts))}")
        return
    if api in SKIPPED_KINDS:
        spec = obj["spec"]
        endpoints = spec.get("endpoints") or spec.get("podMetricsEndpoints")
        if not spec.get("selector", {}).get("matchLabels") or not endpoints or not all(e.get("port") for e in endpoints):
            fail(f"{where}: {obj['kind']} lacks a selector or endpoint ports")
        print(f"    skip schema of {obj['kind']} {obj['metadata']['name']}: {SKIPPED_KINDS[api]}")
        return
    if obj["kind"] in crd_by_kind and api.startswith("proofpipe.dev/"):
        crd_schema_validate(obj)
        return
    try:
        kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        fail(f"{where}: {obj['kind']} {obj['metadata'].get('name')}: {error.message} at "
             f"{'.'.join(map(str, error.path))}")
    except kubernetes_validate.SchemaNotFoundError as error:
        fail(f"{where}: {error.message}")


for crd in crds:
    validate(crd, "chart crds/")
for example in examples:
    validate(example, str(example_path))
ok(f"CRDs valid against Kubernetes {KUBE_VERSION}; {example_path} valid against its CRD schema")

for scenario, (objects, manifests) in rendered.items():
    for obj in objects:
        validate(obj, scenario)
    ok(f"{scenario}: every rendered object valid against the Kubernetes {KUBE_VERSION} schemas (strict)")

# What the alerts stand on, in the code: a tripwire for each.
premises = {
    "operator/src/pool/pod_spec.rs": ('spec.restart_policy = Some("Never".into());',
                                      "ProofpipeProverCrashLooping counts a prover pod name's replacements "
                                      "because prover pods never restart in place"),
    "operator/src/runtime/leader_election.rs": (".replace(LEASE_NAME",
                                                "ProofpipeOperatorNoLeader reads the leader's Lease renewals as "
                                                "PUTs (verb update)"),
    "operator/src/runtime/api_metrics.rs": ('http::Method::PUT => "update"',
                                            "ProofpipeOperatorNoLeader counts the Lease's PUTs as verb update"),
}
for source, (needle, why) in premises.items():
    if needle not in Path(source).read_text():
        fail(f"{source} no longer has {needle!r}: {why}; change templates/prometheusrule.yaml with it")
lib = Path("operator/src/lib.rs").read_text()
if not 0 <= lib.find("runtime::api_metrics::counted(client") < lib.find("LeaderElector::new("):
    fail("operator/src/lib.rs: the leader elector no longer gets the counted client, so "
         "proofpipe_operator_api_requests_total misses the Lease renewals ProofpipeOperatorNoLeader reads")
# `helm upgrade --reuse-values` from a release before the newer alert keys renders with the
# previous chart's values, without them (a null removes a key, as there): the template's
# fallbacks are values.yaml's defaults.
reuse = {"prometheusRule": {"enabled": True, "noLeaderFor": None, "gatewayUnavailableFor": None,
                            "proverReplacements": None, "runbookBaseUrl": None},
         "gateway": {"enabled": True, "pool": "h200", "artifacts": "s3://proofs"}}
rules = {r["alert"]: r for o in render(reuse)[0] if o["kind"] == "PrometheusRule"
         for g in o["spec"]["groups"] for r in g["rules"]}
wanted_defaults = defaults["prometheusRule"]
if (rules["ProofpipeOperatorNoLeader"]["for"], rules["ProofpipeGatewayUnavailable"]["for"]) != (
        wanted_defaults["noLeaderFor"], wanted_defaults["gatewayUnavailableFor"]) \
        or f">= {wanted_defaults['proverReplacements']}\n" not in rules["ProofpipeProverCrashLooping"]["expr"] \
        or not rules["ProofpipeNoReadyProver"]["annotations"]["runbook_url"].startswith(
            f"{wanted_defaults['runbookBaseUrl']}docs/operating.md#"):
    fail("templates/prometheusrule.yaml: the fallbacks of noLeaderFor, gatewayUnavailableFor, "
         "proverReplacements or runbookBaseUrl are not values.yaml's defaults")
ok("PrometheusRule: the alerts' premises hold in operator/src (prover pods never restart, the leader's "
   "Lease renewals counted as PUTs), and it renders with values.yaml's defaults without the newer keys "
   "(helm upgrade --reuse-values)")

def component(obj):
    """The app.kubernetes.io/component of a chart object: operator or gateway."""
    return (obj["metadata"].get("labels") or {}).get("app.kubernetes.io/component")


def of_component(objects, kind, name):
    found = [o for o in objects if o["kind"] == kind and component(o) == name]
    if len(found) != 1:
        fail(f"expected one {kind} of the {name}, rendered {len(found)}")
    return found[0]


def hardened(pod, container):
    """The restricted Pod Security Standard and more, for a pod of the chart."""
    security = container["securityContext"]
    return {
        "pod runAsNonRoot": pod["securityContext"].get("runAsNonRoot") is True,
        "pod seccomp RuntimeDefault": pod["securityContext"].get("seccompProfile", {}).get("type") == "RuntimeDefault",
        "runAsNonRoot": security.get("runAsNonRoot") is True,
        "non-root uid": security.get("runAsUser", 0) > 0,
        "readOnlyRootFilesystem": security.get("readOnlyRootFilesystem") is True,
        "allowPrivilegeEscalation false": security.get("allowPrivilegeEscalation") is False,
        "privileged false": security.get("privileged") is False,
        "capabilities drop ALL": security.get("capabilities", {}).get("drop") == ["ALL"],
        "capabilities add none": not security.get("capabilities", {}).get("add"),
        "container seccomp RuntimeDefault": security.get("seccompProfile", {}).get("type") == "RuntimeDefault",
        "no host namespaces": not (pod.get("hostNetwork") or pod.get("hostPID") or pod.get("hostIPC")),
        "no hostPath volumes": not any("hostPath" in v for v in pod.get("volumes", [])),
        "resource requests": {"cpu", "memory"} <= set(container["resources"].get("requests", {})),
        "a memory limit": "memory" in container["resources"].get("limits", {}),
    }


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


# Hardening and probes of the operator Deployment.
for scenario, (objects, _) in rendered.items():
    deployment = of_component(objects, "Deployment", "operator")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    wanted = hardened(pod, container) | {
        "resource limits": {"cpu", "memory"} <= set(container["resources"].get("limits", {})),
        "liveness /healthz": container["livenessProbe"]["httpGet"]["path"] == "/healthz",
        "readiness /readyz": container["readinessProbe"]["httpGet"]["path"] == "/readyz",
        "args run --listen": container["args"][:2] == ["run", "--listen"],
        "PROOFPIPE_LOG_FORMAT as configured": {e["name"]: e.get("value") for e in container["env"]}.get(
            "PROOFPIPE_LOG_FORMAT") == scenarios[scenario].get("operator", {}).get("logFormat", "text"),
        "POD_NAMESPACE and POD_NAME from the pod": {
            e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in container["env"]
        }.items() >= {"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"}.items(),
    }
    port = int(container["args"][2].rsplit(":", 1)[1])
    wanted["--listen port is the container port"] = port == container["ports"][0]["containerPort"]
    namespace = scenarios[scenario].get("operator", {}).get("watchNamespace")
    wanted["--namespace as configured"] = (container["args"][3:] == ["--namespace", namespace]) if namespace else len(container["args"]) == 3
    broken = [name for name, good in wanted.items() if not good]
    if broken:
        fail(f"{scenario}: operator Deployment lacks {broken}")

# Hardening, probes, flags, mounts and the NetworkPolicy of the gateway.
gateway_defaults = defaults["gateway"]
gateway_scenarios = 0
for scenario, (objects, _) in rendered.items():
    values = scenarios[scenario].get("gateway", {})
    if not values.get("enabled"):
        if any(component(o) == "gateway" for o in objects):
            fail(f"{scenario}: gateway objects rendered with gateway.enabled false")
        continue
    gateway_scenarios += 1
    g = {**gateway_defaults, **values}
    auth = {**gateway_defaults["auth"], **values.get("auth", {})}
    token = {**gateway_defaults["auth"]["token"], **auth.get("token", {})}
    policy_values = {**gateway_defaults["networkPolicy"], **values.get("networkPolicy", {})}
    gateway_namespace = g["namespace"] or NAMESPACE
    deployment = of_component(objects, "Deployment", "gateway")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = container["args"]
    flags = {}
    for index, arg in enumerate(args):
        if arg.startswith("--"):
            following = args[index + 1] if index + 1 < len(args) else None
            flags[arg] = None if following is None or following.startswith("--") else following
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}

    def mounted_from(path):
        """The volume that holds the file at `path`, and the file's path inside it."""
        for mount, name in mounts.items():
            if path.startswith(mount.rstrip("/") + "/"):
                return volumes.get(name), path[len(mount.rstrip("/")) + 1:]
        return None, None

    wanted = hardened(pod, container) | {
        "its own ServiceAccount": pod["serviceAccountName"] == of_component(objects, "ServiceAccount", "gateway")[
            "metadata"]["name"] and pod["serviceAccountName"] != of_component(
                objects, "Deployment", "operator")["spec"]["template"]["spec"]["serviceAccountName"],
        "the ServiceAccount token mounted (it calls the API server)": pod.get("automountServiceAccountToken") is not False,
        "in gateway.namespace": deployment["metadata"]["namespace"] == gateway_namespace,
        "replicas as configured": deployment["spec"]["replicas"] == g["replicas"],
        "terminationGracePeriodSeconds above 0": pod.get("terminationGracePeriodSeconds", 0) > 0,
        "liveness /healthz on the metrics port": container["livenessProbe"]["httpGet"] == {
            "path": "/healthz", "port": "http-metrics"},
        "readiness /healthz on the metrics port": container["readinessProbe"]["httpGet"] == {
            "path": "/healthz", "port": "http-metrics"},
        "--listen on the grpc container port 9820": flags.get("--listen") == "0.0.0.0:9820" and ports.get("grpc") == 9820,
        "--metrics-listen on the http-metrics container port 9821":
            flags.get("--metrics-listen") == "0.0.0.0:9821" and ports.get("http-metrics") == 9821,
        "POD_NAMESPACE from the pod (--namespace's default)":
            env_of(container).get("POD_NAMESPACE", {}).get("valueFrom", {}).get("fieldRef", {}).get(
                "fieldPath") == "metadata.namespace" and "--namespace" not in flags,
        "--pool (the default, then KIND=NAME per gateway.poolsByKind) and --artifacts as configured":
            [args[i + 1] for i, a in enumerate(args) if a == "--pool"]
            == [g["pool"]] + [f"{k}={v}" for k, v in sorted(g.get("poolsByKind", {}).items())]
            and flags.get("--artifacts") == g["artifacts"],
        "--max-message-bytes, --job-ttl-seconds, --backoff-limit as configured": (
            flags.get("--max-message-bytes"), flags.get("--job-ttl-seconds"), flags.get("--backoff-limit")) == (
            str(g["maxMessageBytes"]), str(g["jobTtlSeconds"]), str(g["backoffLimit"])),
        "--log and --log-format as configured": (flags.get("--log"), flags.get("--log-format")) == (
            g["logLevel"], g["logFormat"]),
        "extraEnv and envFrom passed on": all(env_of(container).get(e["name"]) == e for e in g.get("extraEnv", []))
            and container.get("envFrom", []) == g.get("envFrom", []),
        "exactly one of --token-file and --allow-unauthenticated": ("--token-file" in flags) != (
            "--allow-unauthenticated" in flags),
    }
    if auth["allowUnauthenticated"]:
        wanted["--allow-unauthenticated, no token Secret"] = "--allow-unauthenticated" in flags and not any(
            o["kind"] == "Secret" for o in objects)
    else:
        volume, inside = mounted_from(flags.get("--token-file") or "")
        secret_name = token["existingSecret"] or f"{deployment['metadata']['name']}-token"
        wanted["--token-file is the token key of the token Secret, mounted whole"] = (
            volume is not None and volume.get("secret", {}).get("secretName") == secret_name
            and inside == token["key"] and not any(m.get("subPath") for m in container["volumeMounts"]))
        generated = [o for o in objects if o["kind"] == "Secret"]
        if token["existingSecret"]:
            wanted["no Secret generated for an existing one"] = not generated
        else:
            wanted["the generated token Secret, 48 characters"] = len(generated) == 1 and generated[0][
                "metadata"]["name"] == secret_name and generated[0]["metadata"]["namespace"] == gateway_namespace and len(
                __import__("base64").b64decode(generated[0]["data"]["token"])) == 48
    tls_secret = g["tls"]["secretName"]
    if tls_secret:
        cert, cert_file = mounted_from(flags.get("--tls-cert") or "")
        key, key_file = mounted_from(flags.get("--tls-key") or "")
        wanted["--tls-cert and --tls-key from the TLS Secret"] = (
            cert is key is not None and cert["secret"]["secretName"] == tls_secret
            and (cert_file, key_file) == ("tls.crt", "tls.key"))
    else:
        wanted["no TLS flags without gateway.tls.secretName"] = not {"--tls-cert", "--tls-key"} & set(flags)
    if g["artifacts"].startswith("file://"):
        volume, _ = mounted_from(g["artifacts"][len("file://"):].rstrip("/") + "/x")
        wanted["file:// artifacts on the artifact PVC"] = volume is not None and volume.get(
            "persistentVolumeClaim", {}).get("claimName") == g["artifactVolume"]["claimName"]
    broken = [name for name, good in wanted.items() if not good]
    if broken:
        fail(f"{scenario}: gateway Deployment lacks {broken}")

    service = of_component(objects, "Service", "gateway")
    grpc = next((p for p in service["spec"]["ports"] if p["name"] == "grpc"), None)
    if not grpc or grpc.get("appProtocol") != "grpc" or grpc["targetPort"] != "grpc":
        fail(f"{scenario}: the gateway Service lacks a grpc port (appProtocol grpc, target grpc): {service['spec']['ports']}")
    if service["metadata"]["namespace"] != gateway_namespace:
        fail(f"{scenario}: the gateway Service is not in {gateway_namespace}")

    policies = [o for o in objects if o["kind"] == "NetworkPolicy" and component(o) == "gateway"]
    if policy_values["enabled"] != bool(policies):
        fail(f"{scenario}: gateway.networkPolicy.enabled is {policy_values['enabled']}, "
             f"{len(policies)} gateway NetworkPolicies rendered")
    if auth["allowUnauthenticated"] and policy_values["enabled"]:
        rules = policies[0]["spec"]["ingress"]
        grpc_rules = [r for r in rules if any(p["port"] in ("grpc", 9820) for p in r["ports"])]
        if not grpc_rules or not all(r.get("from") == policy_values["grpcFrom"] for r in grpc_rules):
            fail(f"{scenario}: without a token, the gateway's gRPC port must admit only grpcFrom: {rules}")
        if any(not r.get("ports") for r in rules):
            fail(f"{scenario}: a gateway NetworkPolicy rule admits every port: {rules}")
if gateway_scenarios < 2:
    fail(f"the gateway is enabled in {gateway_scenarios} scenarios: the checks above check nothing")

# The parameter Job (paramsFetch): the same hardening, the flags of `proofpipe-prover params
# fetch` as configured, the claim mounted read-write where --dir points, no API token, a
# name that changes with its values (a Job's pod template is immutable), and the claim the
# chart creates kept on uninstall.
PARAMS_DIR = "/var/tmp/filecoin-proof-parameters"
params_defaults = defaults["paramsFetch"]
app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
params_scenarios = 0
for scenario, (objects, _) in rendered.items():
    values = scenarios[scenario].get("paramsFetch", {})
    if not values.get("enabled"):
        if any(component(o) == "params-fetch" for o in objects):
            fail(f"{scenario}: parameter Job objects rendered with paramsFetch.enabled false")
        continue
    params_scenarios += 1
    p = {**params_defaults, **values}
    create = {**params_defaults["createPersistentVolumeClaim"], **values.get("createPersistentVolumeClaim", {})}
    image = {**params_defaults["image"], **values.get("image", {})}
    job = of_component(objects, "Job", "params-fetch")
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    params_mount = mounts.get(PARAMS_DIR, {})
    expected_args = ["params", "fetch", "--base-url", p["baseUrl"].rstrip("/")]
    for mirror in p.get("mirrors", []):
        expected_args += ["--base-url", mirror.rstrip("/")]
    expected_args += ["--dir", PARAMS_DIR]
    for size in p["sectorSizes"]:
        expected_args += ["--sector-size", size]
    for kind in p["kinds"]:
        expected_args += ["--kind", kind]
    if p.get("porepMatrices"):
        expected_args += ["--porep-matrices"]
    wanted = hardened(pod, container) | {
        "in paramsFetch.namespace": job["metadata"]["namespace"] == (p["namespace"] or NAMESPACE),
        "args: params fetch with --base-url, --dir, --sector-size, --kind and --porep-matrices as configured":
            container["args"] == expected_args and "command" not in container,
        "the prover image as configured": container["image"] == f"{image['repository']}:{image.get('tag') or app_version}"
            and container["imagePullPolicy"] == image["pullPolicy"],
        "the claim mounted read-write at --dir": not params_mount.get("readOnly") and volumes.get(
            params_mount.get("name"), {}).get("persistentVolumeClaim", {}).get("claimName") == p["persistentVolumeClaim"],
        "FIL_PROOFS_PARAMETER_CACHE is --dir": env_of(container).get("FIL_PROOFS_PARAMETER_CACHE", {}).get(
            "value") == PARAMS_DIR,
        "extraEnv passed on": all(env_of(container).get(e["name"]) == e for e in p.get("extraEnv", [])),
        "a writable /tmp (read-only root)": "emptyDir" in volumes.get(mounts.get("/tmp", {}).get("name"), {}),
        "fsGroup: the claim writable by the non-root user": pod["securityContext"].get("fsGroup") == defaults[
            "runAs"]["group"],
        "no ServiceAccount token": pod.get("automountServiceAccountToken") is False,
        "restartPolicy Never": pod.get("restartPolicy") == "Never",
        "backoffLimit as configured": job["spec"]["backoffLimit"] == p["backoffLimit"],
        "ttlSecondsAfterFinished as configured": job["spec"].get("ttlSecondsAfterFinished") == p.get(
            "ttlSecondsAfterFinished"),
        "no selector of its own (the Job controller's)": "selector" not in job["spec"],
    }
    claims = [o for o in objects if o["kind"] == "PersistentVolumeClaim"]
    if create["enabled"]:
        claim = claims[0] if len(claims) == 1 else {"metadata": {}, "spec": {}}
        wanted["the claim created: its name, namespace, size, class, access modes, kept on uninstall"] = (
            claim["metadata"].get("name") == p["persistentVolumeClaim"]
            and claim["metadata"].get("namespace") == job["metadata"]["namespace"]
            and (claim["metadata"].get("annotations") or {}).get("helm.sh/resource-policy") == "keep"
            and claim["spec"].get("resources", {}).get("requests", {}).get("storage") == create["size"]
            and claim["spec"].get("storageClassName", "") == create["storageClassName"]
            and claim["spec"].get("accessModes") == create["accessModes"])
    else:
        wanted["no claim created for an existing one"] = not claims
    changed, _ = render({**scenarios[scenario], "paramsFetch": {**values, "sectorSizes": ["64GiB"]}})
    same, _ = render(scenarios[scenario])
    wanted["a new name when its values change, the same otherwise"] = (
        of_component(changed, "Job", "params-fetch")["metadata"]["name"] != job["metadata"]["name"]
        and of_component(same, "Job", "params-fetch")["metadata"]["name"] == job["metadata"]["name"]
        and len(job["metadata"]["name"]) <= 63)
    pod_labels = job["spec"]["template"]["metadata"]["labels"]
    for name in ("operator", "gateway"):
        if any(o["kind"] == "Deployment" and component(o) == name for o in objects):
            selector = of_component(objects, "Deployment", name)["spec"]["selector"]["matchLabels"]
            wanted[f"its pod not selected by the {name}'s selector"] = not selector.items() <= pod_labels.items()
    broken = [name for name, good in wanted.items() if not good]
    if broken:
        fail(f"{scenario}: parameter Job lacks {broken}")
if params_scenarios < 2:
    fail(f"the parameter Job is enabled in {params_scenarios} scenarios: the checks above check nothing")
ok(f"parameter Job ({params_scenarios} scenarios): the same hardening, no API token, `params fetch` flags "
   "as configured, the claim read-write at --dir (created and kept on uninstall, or existing), "
   "a new name when its values change")

# Selectors: what the API server's built-in validation (absent from kube-testenv) and the
# controllers would catch only in a real cluster. Each component's objects select its own
# pods and never the other's.
for scenario, (objects, _) in rendered.items():
    pods = {name: of_component(objects, "Deployment", name)["spec"]["template"]["metadata"]["labels"]
            for name in ("operator", "gateway") if any(component(o) == name for o in objects)}
    for name, pod_labels in pods.items():
        deployment = of_component(objects, "Deployment", name)
        service = of_component(objects, "Service", name)
        selecting = {
            "Deployment": deployment["spec"]["selector"]["matchLabels"],
            "Service": service["spec"]["selector"],
        }
        for obj in objects:
            if component(obj) != name:
                continue
            if obj["kind"] == "PodDisruptionBudget":
                selecting["PodDisruptionBudget"] = obj["spec"]["selector"]["matchLabels"]
            if obj["kind"] == "NetworkPolicy":
                selecting["NetworkPolicy"] = obj["spec"]["podSelector"]["matchLabels"]
            if obj["kind"] == "ServiceMonitor":
                if not obj["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items():
                    fail(f"{scenario}: the ServiceMonitor does not select the metrics Service")
                if obj["spec"]["endpoints"][0]["port"] not in [p["name"] for p in service["spec"]["ports"]]:
                    fail(f"{scenario}: the ServiceMonitor names a port the Service lacks")
            if obj["kind"] == "PodMonitor":
                if obj["spec"]["selector"]["matchLabels"] != {
                        "app.kubernetes.io/name": "proofpipe-prover",
                        "app.kubernetes.io/managed-by": "proofpipe-operator"}:
                    fail(f"{scenario}: the PodMonitor does not select the prover pods' labels (operator/src/names.rs)")
        for kind, selector in selecting.items():
            if not selector or not selector.items() <= pod_labels.items():
                fail(f"{scenario}: the {name}'s {kind} selector {selector} does not select its pods {pod_labels}")
            for other, other_labels in pods.items():
                if other != name and selector.items() <= other_labels.items():
                    fail(f"{scenario}: the {name}'s {kind} selector {selector} also selects the {other} pods")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        for port in service["spec"]["ports"]:
            if port["targetPort"] not in [p["name"] for p in container["ports"]]:
                fail(f"{scenario}: the {name} Service targets a port its container does not name: {port}")
        if deployment["spec"]["template"]["spec"]["serviceAccountName"] not in [
                o["metadata"]["name"] for o in objects
                if o["kind"] == "ServiceAccount" and o["metadata"]["namespace"] == deployment["metadata"]["namespace"]]:
            fail(f"{scenario}: the {name} Deployment's ServiceAccount is not rendered in its namespace")
ok("selectors of the Deployments, Services, PDB, NetworkPolicies and monitors match their own pods only")
for scenario, (objects, _) in rendered.items():
    gateway_values = scenarios[scenario].get("gateway", {})
    if not gateway_values.get("enabled"):
        continue
    service_values = gateway_values.get("service", {})
    spec = of_component(objects, "Service", "gateway")["spec"]
    wanted_ranges = service_values.get("loadBalancerSourceRanges") if service_values.get("type") == "LoadBalancer" else None
    if spec.get("loadBalancerSourceRanges") != wanted_ranges:
        fail(f"{scenario}: the gateway Service's loadBalancerSourceRanges are {spec.get('loadBalancerSourceRanges')}, "
             f"not {wanted_ranges}")
ok("the gateway Service takes gateway.service.loadBalancerSourceRanges when it is a LoadBalancer")

ok("operator Deployment: non-root, read-only root, no privilege escalation, no capabilities, "
   "seccomp, requests and limits, probes, leader-election env, args (all scenarios)")
ok(f"gateway Deployment ({gateway_scenarios} scenarios): the same hardening, its own ServiceAccount, "
   "/healthz probes on the metrics port, POD_NAMESPACE, flags as configured, the token Secret mounted "
   "whole (or --allow-unauthenticated with a NetworkPolicy naming the callers), TLS and artifact volume")


# A tripwire for new kinds of API calls in the operator: `needed` below lists what the
# calls known today require; a call of another kind must be added to the chart's RBAC (and
# here) before this passes.
KNOWN_CALLS = {"get_opt", "list", "create", "replace", "patch", "patch_status", "patch_scale", "delete"}
API_CALLS = {"get_opt", "list", "create", "replace", "replace_status", "replace_scale", "patch",
             "patch_status", "patch_scale", "patch_metadata", "get_status", "get_scale",
             "get_metadata", "list_metadata", "delete", "delete_collection", "evict",
             "watch", "watch_metadata", "create_subresource", "patch_subresource"}
calls = set()
for source in Path("operator/src").rglob("*.rs"):
    calls |= set(re.findall(r"\.(" + "|".join(sorted(API_CALLS)) + r")\(", source.read_text()))
if calls - KNOWN_CALLS:
    fail(f"operator/src makes API calls of a kind the chart's RBAC was not derived for: "
         f"{sorted(calls - KNOWN_CALLS)}; add their permissions to templates/rbac.yaml and here")
if "patch_scale" not in calls:
    fail("operator/src no longer calls patch_scale: drop proverpools/scale from templates/rbac.yaml and here")

# The same tripwire for the gateway, whose Role must grant exactly GATEWAY_NEEDS: a call of
# another kind, or an Api of another resource, must be added to templates/gateway-rbac.yaml
# (with its reason) and here. (`.list(`/`.delete(` also match the artifact store's calls.)
GATEWAY_CALLS = {"get_opt", "list", "create", "delete"}
GATEWAY_KINDS = {"ProofJob", "ProverPool"}
GATEWAY_NEEDS = {("proofpipe.dev", "proofjobs", v) for v in ("get", "list", "watch", "create", "delete")} | {
    ("proofpipe.dev", "proverpools", v) for v in ("list", "watch")}
calls, kinds = set(), set()
for source in Path("gateway/src").rglob("*.rs"):
    text = source.read_text()
    calls |= set(re.findall(r"\.(" + "|".join(sorted(API_CALLS)) + r")\(", text))
    kinds |= set(re.findall(r"\bApi(?:::)?<(\w+)>", text)) | set(re.findall(r"watch_into_store::<(\w+)>", text))
kinds -= {"K"}  # the generic watch helper (cache.rs), instantiated with the kinds above
if calls - GATEWAY_CALLS:
    fail(f"gateway/src makes API calls of a kind the chart's gateway RBAC was not derived for: "
         f"{sorted(calls - GATEWAY_CALLS)}; add their permissions to templates/gateway-rbac.yaml and here")
if kinds - GATEWAY_KINDS or "ProofJob" not in kinds:
    fail(f"gateway/src uses the API of {sorted(kinds)}; templates/gateway-rbac.yaml covers {sorted(GATEWAY_KINDS)}")


def prover_role_rules():
    """The rules of the prover Role the operator applies (operator/src/pool/prover_rbac.rs)."""
    text = Path("operator/src/pool/prover_rbac.rs").read_text()
    # `rule(&[resources], &[verbs])` is in proofpipe.dev; `rule_in("group", &[...], &[...])`
    # names its group.
    rules = [("proofpipe.dev", r, v) for r, v in
             re.findall(r'\brule\(&\[([^\]]*)\],\s*&\[([^\]]*)\]\)', text)]
    rules += re.findall(r'\brule_in\("([^"]+)",\s*&\[([^\]]*)\],\s*&\[([^\]]*)\]\)', text)
    parsed = [(g, re.findall(r'"([^"]+)"', r), re.findall(r'"([^"]+)"', v)) for g, r, v in rules]
    if len(parsed) < 4 or 'rule_in("proofpipe.dev", resources, verbs)' not in text:
        fail("cannot read the prover Role's rules from operator/src/pool/prover_rbac.rs")
    return [(group, resource, verb) for group, resources, verbs in parsed
            for resource in resources for verb in verbs]


def grants(rules):
    out = set()
    for rule in rules:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                for verb in rule.get("verbs", []):
                    out.add((group, resource, verb))
    return out


for scenario, (objects, manifests) in rendered.items():
    for template, rbac_text in manifests.items():
        if not template.endswith(("/rbac.yaml", "/gateway-rbac.yaml")):
            continue
        lines = rbac_text.splitlines()
        for index, line in enumerate(lines):
            if re.match(r"^\s*- apiGroups:", line) and not lines[index - 1].strip().startswith("#"):
                fail(f"{scenario}: RBAC rule without a comment saying why: {line.strip()} "
                     f"({template.rsplit('/', 1)[1]} line {index + 1})")
    roles = [o for o in objects if o["kind"] in ("Role", "ClusterRole")]
    for role in roles:
        for rule in role["rules"]:
            if "*" in rule["verbs"] or "*" in rule["resources"] or "*" in rule["apiGroups"]:
                fail(f"{scenario}: {role['kind']} {role['metadata']['name']} has a wildcard rule {rule}")
            if {"escalate", "bind", "impersonate"} & set(rule["verbs"]):
                fail(f"{scenario}: {role['kind']} {role['metadata']['name']} grants escalate/bind/impersonate")
            if rule["resources"] == ["secrets"] or "secrets" in rule["resources"]:
                fail(f"{scenario}: {role['kind']} {role['metadata']['name']}: neither the operator nor "
                     "the gateway has a reason to read Secrets")
    if scenarios[scenario].get("gateway", {}).get("enabled"):
        gateway_roles = [r for r in roles if component(r) == "gateway"]
        if [r["kind"] for r in gateway_roles] != ["Role"] or any(
                o["kind"].startswith("Cluster") for o in objects if component(o) == "gateway"):
            fail(f"{scenario}: the gateway must have one namespaced Role and nothing cluster-wide")
        gateway_role = gateway_roles[0]
        if grants(gateway_role["rules"]) != GATEWAY_NEEDS:
            fail(f"{scenario}: the gateway Role grants {sorted(grants(gateway_role['rules']))}, "
                 f"least privilege is exactly {sorted(GATEWAY_NEEDS)}")
        binding = of_component(objects, "RoleBinding", "gateway")
        account = of_component(objects, "ServiceAccount", "gateway")
        if binding["roleRef"] != {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": gateway_role["metadata"]["name"]} or binding["subjects"] != [
                {"kind": "ServiceAccount", "name": account["metadata"]["name"],
                 "namespace": account["metadata"]["namespace"]}] or len(
                {gateway_role["metadata"]["namespace"], binding["metadata"]["namespace"],
                 account["metadata"]["namespace"]}) != 1:
            fail(f"{scenario}: the gateway RoleBinding does not bind its Role to its ServiceAccount in its namespace")
    main_role = next(r for r in roles if r["metadata"]["name"] == "proofpipe" and r["kind"] in ("Role", "ClusterRole"))
    held = grants(main_role["rules"])
    lacking = [g for g in prover_role_rules() if g not in held]
    if lacking:
        fail(f"{scenario}: the operator cannot create the prover Role without escalate: it lacks {lacking}")
    needed = {
        ("proofpipe.dev", "proofjobs", v) for v in ("get", "list", "watch", "patch", "delete")
    } | {("proofpipe.dev", "proverpools", v) for v in ("get", "list", "watch")} | {
        ("proofpipe.dev", "proofjobs/status", "patch"), ("proofpipe.dev", "proverpools/status", "patch"),
        ("proofpipe.dev", "proverpools/scale", "patch"),
        ("", "pods", "create"), ("", "pods", "delete"), ("", "pods", "list"), ("", "pods", "watch"), ("", "pods", "get"),
        ("", "serviceaccounts", "patch"), ("rbac.authorization.k8s.io", "roles", "patch"),
        ("rbac.authorization.k8s.io", "rolebindings", "patch"), ("events.k8s.io", "events", "create"),
    }
    if needed - held:
        fail(f"{scenario}: the operator's role lacks {sorted(needed - held)}")
    lease = grants(next(r for r in roles if r["metadata"]["name"].endswith("leader-election"))["rules"])
    if not {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")} <= lease:
        fail(f"{scenario}: the leader-election Role lacks get/create/update on leases")
ok("RBAC: a comment on every rule, no wildcards or escalate/bind, every verb the code uses, "
   "and every permission of the prover Role held (so it can be granted); the gateway: one Role "
   "in its namespace granting exactly what gateway/src calls for, bound to its own ServiceAccount")

# ---- 7. apply to an API server --------------------------------------------------------
if not os.environ.get("KUBECONFIG") or os.environ.get("CHART_CHECK_APPLY") == "0":
    print("chart-check: KUBECONFIG unset (or CHART_CHECK_APPLY=0): not applying to an API server")
else:
    from kubernetes import client as kclient, config as kconfig, dynamic
    from kubernetes.dynamic.exceptions import ApiException, ResourceNotFoundError

    import urllib3
    # kube-testenv's kubeconfig sets insecure-skip-tls-verify (a loopback server): say so
    # once instead of warning on every request.
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    kconfig.load_kube_config()
    api = dynamic.DynamicClient(kclient.ApiClient())
    namespace = "proofpipe-chart-check"
    manager = "proofpipe-chart-check"

    def resource(obj):
        try:
            return api.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        except ResourceNotFoundError:
            return None

    def subset(sent, stored, path=""):
        """Every field sent is stored unchanged (quantities normalized by the server aside)."""
        if isinstance(sent, dict):
            if not isinstance(stored, dict):
                return f"{path}: sent an object, stored {stored!r}"
            for key, value in sent.items():
                if key not in stored:
                    return f"{path}.{key}: sent, not stored (dropped as unknown?)"
                problem = subset(value, stored[key], f"{path}.{key}")
                if problem:
                    return problem
        elif isinstance(sent, list):
            if not isinstance(stored, list) or len(stored) != len(sent):
                return f"{path}: list of {len(sent)} sent, {stored!r} stored"
            for index, (a, b) in enumerate(zip(sent, stored)):
                problem = subset(a, b, f"{path}[{index}]")
                if problem:
                    return problem
        elif str(sent) != str(stored):
            return f"{path}: sent {sent!r}, stored {stored!r}"
        return None

    def apply(obj, dry_run=False):
        kind = resource(obj)
        body = copy.deepcopy(obj)
        kwargs = {"field_manager": manager, "force_conflicts": True}
        if dry_run:
            kwargs["dry_run"] = "All"
        try:
            return kind.server_side_apply(body=body, namespace=obj["metadata"].get("namespace"), **kwargs).to_dict()
        except ApiException as error:
            fail(f"API server refused {obj['kind']} {obj['metadata']['name']}: {error.status} {error.body}")

    applied = []
    skipped = {}
    try:
        for crd in crds:
            apply(crd)
        ok(f"API server accepted the chart's CRDs ({', '.join(c['metadata']['name'] for c in crds)})")
        apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        # The examples' namespaces.
        for example_namespace in sorted({e["metadata"]["namespace"] for e in examples}):
            apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": example_namespace}})
        for scenario in ("every-toggle-on", "one-namespace", "gateway-unauthenticated", "quickstart-filecoin"):
            objects, _ = render(scenarios[scenario], namespace=namespace)
            count = 0
            for obj in objects:
                kind = resource(obj)
                if kind is None:
                    skipped[f"{obj['apiVersion']} {obj['kind']}"] = "not served by this API server"
                    continue
                stored = apply(obj)
                applied.append((kind, obj))
                count += 1
                fetched = kind.get(name=obj["metadata"]["name"], namespace=obj["metadata"].get("namespace")).to_dict()
                problem = subset({k: v for k, v in obj.items() if k != "metadata"},
                                 {k: v for k, v in fetched.items() if k != "metadata"})
                if problem:
                    fail(f"{scenario}: {obj['kind']} {obj['metadata']['name']} {problem}")
                if subset(obj["metadata"].get("labels", {}), fetched["metadata"].get("labels") or {}) is not None:
                    fail(f"{scenario}: {obj['kind']} {obj['metadata']['name']} lost labels")
            ok(f"{scenario}: API server accepted {count} objects by server-side apply, stored as sent")
        for skip, why in sorted(skipped.items()):
            print(f"    skip apply of {skip}: {why}")
        for example in examples:
            apply(example, dry_run=True)
        # The dry-run must be able to fail: a pool the CRD's CEL rules refuse.
        bad = copy.deepcopy(examples[0])
        bad["spec"]["pipeline"]["partitionWorkers"] = "0"
        try:
            resource(bad).server_side_apply(body=bad, namespace=bad["metadata"]["namespace"],
                                            field_manager=manager, dry_run="All")
            fail("the API server accepted partitionWorkers: \"0\": the dry-run checks nothing")
        except ApiException as error:
            if error.status != 422:
                fail(f"unexpected answer to an invalid ProverPool: {error.status} {error.body}")
        ok(f"API server accepts {example_path} (dry-run, CEL included) and refuses a broken copy")
    finally:
        for kind, obj in reversed(applied):
            try:
                kind.delete(name=obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
            except ApiException as error:
                if error.status != 404:
                    print(f"chart-check: could not delete {obj['kind']} {obj['metadata']['name']}: {error.status}",
                          file=sys.stderr)

print(f"chart-check: took {time.monotonic() - started:.1f} s")
print(f"chart-check: {checked} passed, 0 failed")
PYTHON
