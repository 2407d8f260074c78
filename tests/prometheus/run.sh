#!/usr/bin/env bash
# The alerts and the dashboard, checked with Prometheus's own tools
# (docs/kubernetes.md, "Alerts and the dashboard"):
#
#  1. Debian's prometheus package (2.42: prometheus, promtool), installed
#     when missing.
#  2. promtool check rules deploy/prometheus/alerts.yml.
#  3. promtool test rules tests/prometheus/alerts_test.yml: each alert's unit
#     tests (fires, not before its `for:`, not on its neighbours, resolves).
#  4. deploy/grafana/aegis-gitea-mcp.json is a dashboard: JSON, unique panel
#     ids, every query on a Prometheus datasource variable.
#  5. tests/prometheus/alert_e2e.py: a real Prometheus scrapes a real gateway
#     ($AEGIS_BIN, default target/image/aegis-gitea-mcp), whose audit disk
#     fills: AegisAuditLogUnwritable fires, then resolves once there is room;
#     every dashboard query runs in that Prometheus.
#
# Needs no port of its own (everything on free loopback ports). Prints
# PASS/FAIL lines and ends with `prometheus: N passed, M failed (S s)`;
# exits non-zero on any failure. About 50 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$(date +%s)
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS  $1"; }
fail() { failed=$((failed + 1)); echo "FAIL  $1"; }
finish() {
  local status=$?
  [[ "$status" == 0 || "$failed" != 0 ]] || failed=1
  echo "prometheus: $passed passed, $failed failed ($(($(date +%s) - started)) s)"
}
trap finish EXIT

if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  SUDO=""
  [[ "$(id -u)" -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends prometheus
fi
prometheus --version 2>&1 | sed -n 1p

if out="$(promtool check rules deploy/prometheus/alerts.yml 2>&1)"; then
  pass "promtool check rules deploy/prometheus/alerts.yml ($(grep -o '[0-9]* rules found' <<<"$out"))"
else
  echo "$out"
  fail "promtool check rules deploy/prometheus/alerts.yml"
fi

if out="$(promtool test rules tests/prometheus/alerts_test.yml 2>&1)"; then
  pass "promtool test rules tests/prometheus/alerts_test.yml ($(grep -c '^  - name:' tests/prometheus/alerts_test.yml) tests)"
else
  echo "$out"
  fail "promtool test rules tests/prometheus/alerts_test.yml"
fi

if python3 - deploy/grafana/aegis-gitea-mcp.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "panel ids repeat"
assert d["uid"] == "aegis-gitea-mcp" and d["title"], "uid and title"
names = {v["name"] for v in d["templating"]["list"]}
assert {"datasource", "job", "instance"} <= names, names
for p in d["panels"]:
    if p["type"] == "row":
        continue
    assert p["datasource"]["uid"] == "${datasource}", p["title"]
    assert p.get("targets"), p["title"]
    for t in p["targets"]:
        assert t["datasource"]["uid"] == "${datasource}" and t["expr"], p["title"]
    assert p.get("description"), "panel %r has no description" % p["title"]
PY
then
  pass "deploy/grafana/aegis-gitea-mcp.json: a dashboard, every panel on the \${datasource} variable"
else
  fail "deploy/grafana/aegis-gitea-mcp.json"
fi

if python3 tests/prometheus/alert_e2e.py; then
  pass "a real Prometheus fires AegisAuditLogUnwritable on a real gateway's full disk, and resolves it"
else
  fail "the end-to-end alert (tests/prometheus/alert_e2e.py)"
fi
[[ "$failed" == 0 ]]
