#!/usr/bin/env bash
# The Helm chart (deploy/helm/aegis-gitea-mcp) checked with the tools of its
# ecosystem, without a cluster (docs/kubernetes.md, "What CI runs"):
#
#  1. Helm v4.3.2 and the manifest validator (tests/kubernetes/validate, on
#     k8s.io/api v0.37.2), built once per machine from the Go module proxy
#     (tests/kubernetes/tools.sh).
#  2. For each values profile in deploy/helm/aegis-gitea-mcp/ci/:
#     `helm lint --strict` (values.schema.json refuses unknown values),
#     `helm template`, every rendered document decoded strictly into its
#     Kubernetes API type (an unknown field, a wrong type or an unknown kind
#     is an error) with the cross-checks of `validate check` (selectors,
#     port names, the ConfigMap reference, the probes' Host header), and the
#     chart's promises on what was rendered (tests/kubernetes/policy.py).
#  3. Renders that must fail, with the reason the chart gives: SQLite with
#     three replicas, no existingSecret, a grace period below the drain, a
#     secret or a chart-owned setting in `config`, PostgreSQL with an audit
#     log that dies with its pod, an Ingress without forwardedAllowIps, an
#     http publicBaseUrl, an unknown value,
#     gitea.openapi=live with replicas, a Kubernetes older than kubeVersion.
#
# Prints PASS/FAIL lines; ends with `kubernetes-render: N passed, M failed (S s)`
# and exits non-zero on any failure. About 3 s once the tools are cached.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$(date +%s)
CHART=deploy/helm/aegis-gitea-mcp
RELEASE=aegis-gitea-mcp
NAMESPACE=aegis
WORK="$(mktemp -d /tmp/aegis-k8s-render.XXXXXX)"
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS  $1"; }
fail() { failed=$((failed + 1)); echo "FAIL  $1"; }
finish() {
  local status=$?
  rm -rf "$WORK"
  [[ "$status" == 0 || "$failed" != 0 ]] || failed=1
  echo "kubernetes-render: $passed passed, $failed failed ($(($(date +%s) - started)) s)"
}
trap finish EXIT

HELM="$(tests/kubernetes/tools.sh helm | tail -n 1)"
VALIDATE="$(tests/kubernetes/tools.sh validate | tail -n 1)"
# Helm's own state (repositories, cache, plugins) in the run's directory, not in $HOME.
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" HELM_DATA_HOME="$WORK/helm/data"
"$HELM" version --short
echo "validator: $VALIDATE"

# The validator refuses what an API server with strict field validation
# refuses (so that its PASS below means something).
validator_refuses() { # <what> <expected text> <manifest>
  printf '%s\n' "$3" >"$WORK/bad.yaml"
  if "$VALIDATE" check "$WORK/bad.yaml" >/dev/null 2>"$WORK/bad.err"; then
    fail "the validator refuses $1 (it passed)"
  elif grep -qF -- "$2" "$WORK/bad.err"; then
    pass "the validator refuses $1 ($2)"
  else
    cat "$WORK/bad.err"
    fail "the validator refuses $1, but not with \"$2\""
  fi
}
validator_refuses "an unknown field" 'unknown field "datas"' $'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndatas:\n  x: "1"'
validator_refuses "a field in the wrong case" 'unknown field "spec.template.spec.containers[0].securityContext.ReadOnlyRootFilesystem"' \
  $'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers:\n        - {name: c, image: x, securityContext: {ReadOnlyRootFilesystem: true}}'
validator_refuses "an unknown kind" 'no kind "Widget" is registered' $'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: a'
validator_refuses "a value of the wrong type" 'cannot unmarshal number' $'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: 1'
validator_refuses "a key given twice" 'already set in map' $'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b'
validator_refuses "a probe without Host: localhost" 'without the header Host: localhost' \
  $'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers:\n        - name: c\n          image: x\n          ports: [{name: http, containerPort: 8080}]\n          readinessProbe: {httpGet: {path: /health, port: http}}'

profiles=()
for f in "$CHART"/ci/*-values.yaml; do
  p="$(basename "$f" -values.yaml)"
  profiles+=("$p")
done
((${#profiles[@]} >= 3)) || { fail "the chart's ci/ has the sqlite, postgres and postgres-initcontainer profiles"; exit 1; }

for p in "${profiles[@]}"; do
  values="$CHART/ci/$p-values.yaml"
  if out="$("$HELM" lint --strict "$CHART" -f "$values" 2>&1)"; then
    pass "$p: helm lint --strict"
  else
    echo "$out"
    fail "$p: helm lint --strict"
    continue
  fi
  if ! "$HELM" template "$RELEASE" "$CHART" -f "$values" --namespace "$NAMESPACE" >"$WORK/$p.yaml" 2>"$WORK/$p.err"; then
    cat "$WORK/$p.err"
    fail "$p: helm template"
    continue
  fi
  pass "$p: helm template ($(grep -c '^kind: ' "$WORK/$p.yaml") documents)"
  if "$VALIDATE" check "$WORK/$p.yaml" | sed 's/^/      /'; then
    pass "$p: every document decoded strictly into its Kubernetes type; selectors, ports, references and probes agree"
  else
    fail "$p: strict decoding or cross-checks (above)"
    continue
  fi
  "$VALIDATE" json "$WORK/$p.yaml" >"$WORK/$p.json"
  "$VALIDATE" values "$CHART/values.yaml" "$values" >"$WORK/$p.values.json"
  if python3 tests/kubernetes/policy.py "$p" "$WORK/$p.json" "$WORK/$p.values.json" | sed 's/^/      /'; then
    pass "$p: the chart's promises hold on the rendered manifests (policy.py)"
  else
    fail "$p: policy.py (above)"
  fi
done

# A render that must fail, and the words of its reason.
must_fail() { # <what> <expected text> <helm template arguments...>
  local what="$1" expected="$2"
  shift 2
  if "$HELM" template "$RELEASE" "$CHART" --namespace "$NAMESPACE" "$@" >/dev/null 2>"$WORK/refused.err"; then
    fail "refused: $what (it rendered)"
  elif grep -qF -- "$expected" "$WORK/refused.err"; then
    pass "refused: $what ($(grep -oF -- "$expected" "$WORK/refused.err" | head -n 1))"
  else
    cat "$WORK/refused.err"
    fail "refused: $what, but not with \"$expected\""
  fi
}
SQLITE=(-f "$CHART/ci/sqlite-values.yaml")
POSTGRES=(-f "$CHART/ci/postgres-values.yaml")
must_fail "SQLite with replicaCount 3" "SQLite is one process's file" "${SQLITE[@]}" --set replicaCount=3
must_fail "no existingSecret" "existingSecret is required" "${SQLITE[@]}" --set existingSecret=
must_fail "no gitea.url" "gitea.url is required" "${SQLITE[@]}" --set gitea.url=
must_fail "a grace period below the drain and the Gitea timeout" "is below preStopSleepSeconds + shutdownDrainSeconds + gitea.timeoutSeconds + 5 + 1 = 41" "${SQLITE[@]}" --set terminationGracePeriodSeconds=30
must_fail "a secret in config" "config.GITEA_TOKEN is a secret" "${SQLITE[@]}" --set config.GITEA_TOKEN=x
must_fail "a setting the chart owns in config" "config.MCP_HOST: the chart sets this one itself" "${SQLITE[@]}" --set config.MCP_HOST=127.0.0.1
must_fail "PostgreSQL with the audit log on an emptyDir, unshipped" "set audit.forwardUrl" "${POSTGRES[@]}" --set audit.forwardUrl=
must_fail "gitea.openapi=live with three replicas" "use bundled or live-strict" "${POSTGRES[@]}" --set gitea.openapi=live
must_fail "an Ingress without forwardedAllowIps" "ingress.enabled needs forwardedAllowIps" "${SQLITE[@]}" --set forwardedAllowIps=null
must_fail "an http publicBaseUrl off loopback" "must be https://" "${SQLITE[@]}" --set publicBaseUrl=http://mcp.example.com
must_fail "an unknown value (values.schema.json)" "additional properties 'replicas' not allowed" "${SQLITE[@]}" --set replicas=2
must_fail "an unknown store backend (values.schema.json)" "store/backend" "${SQLITE[@]}" --set store.backend=mysql
must_fail "Kubernetes 1.24 (kubeVersion >=1.25)" "chart requires kubeVersion" "${SQLITE[@]}" --kube-version 1.24.0
[[ "$failed" == 0 ]]
