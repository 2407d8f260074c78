#!/usr/bin/env python3
"""What the chart promises, checked on what `helm template` rendered for a
values profile (read as the JSON of `validate json`, after the strict
decoding into the Kubernetes types). Run by tests/kubernetes/render.sh:

    policy.py PROFILE RENDERED.json VALUES.json

PROFILE is sqlite, postgres or postgres-initcontainer; VALUES.json the
profile's values merged over values.yaml (`helm show values` + the profile,
as render.sh passes them). Prints one PASS line per promise and exits 1 on
the first that does not hold.
"""

import json
import sys

profile, rendered, values_path = sys.argv[1:4]
docs = json.load(open(rendered))
values = json.load(open(values_path))
passed = 0


def check(condition, message):
    global passed
    if not condition:
        print("FAIL  %s: %s" % (profile, message))
        sys.exit(1)
    passed += 1
    print("PASS  %s: %s" % (profile, message))


def of_kind(kind):
    return [d for d in docs if d["kind"] == kind]


def one(kind):
    found = of_kind(kind)
    check(len(found) == 1, "one %s (%d)" % (kind, len(found)))
    return found[0]


postgres = profile.startswith("postgres")
deployment = one("Deployment")
spec = deployment["spec"]
pod = spec["template"]["spec"]
gateway = [c for c in pod["containers"] if c["name"] == "gateway"][0]
configmap = one("ConfigMap")["data"]

# ---- nothing secret in what the chart renders ------------------------------
check(not of_kind("Secret"), "no Secret rendered: secrets are read from existingSecret by reference")
secret_names = {
    "AUDIT_HMAC_KEY", "DATABASE_URL", "GITEA_TOKEN", "MCP_BEARER_TOKEN", "GITEA_OAUTH_CLIENT_SECRET",
    "GITEA_OAUTH_READ_CLIENT_SECRET", "TOKEN_ENCRYPTION_KEY", "AUDIT_FORWARD_AUTHORIZATION",
}
check(not secret_names & set(configmap), "the ConfigMap holds no secret setting")
refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in gateway["env"] if "secretKeyRef" in e.get("valueFrom", {})}
check(all(r["name"] == values["existingSecret"] and r["key"] == name for name, r in refs.items()),
      "every secret env entry reads its own key of existingSecret (%s)" % values["existingSecret"])
required = {n for n, r in refs.items() if not r.get("optional")}
want_required = {"AUDIT_HMAC_KEY"} | ({"DATABASE_URL", "TOKEN_ENCRYPTION_KEY"} if postgres else set())
check(required == want_required, "required secret keys: %s" % sorted(required))
check(("DATABASE_URL" in refs) == postgres, "DATABASE_URL read only with PostgreSQL")
check(gateway["envFrom"] == [{"configMapRef": {"name": one("ConfigMap")["metadata"]["name"]}}],
      "the settings come from the chart's ConfigMap")

# ---- settings -------------------------------------------------------------------
check(configmap["MCP_HOST"] == "0.0.0.0" and configmap["MCP_PORT"] == "8080" and configmap["DATA_DIR"] == "/data",
      "MCP_HOST 0.0.0.0, MCP_PORT 8080, DATA_DIR /data (the image's)")
check(configmap["STORE_MIGRATE"] == ("never" if postgres else "auto"),
      "STORE_MIGRATE=%s (%s)" % (configmap["STORE_MIGRATE"], "the migration step migrates" if postgres else "the one replica migrates at start"))
check(configmap["METRICS_BIND"] == "0.0.0.0:%d" % values["metrics"]["port"], "METRICS_BIND on the metrics port")
check(configmap["GITEA_URL"] == values["gitea"]["url"].rstrip("/") and configmap["PUBLIC_BASE_URL"] == values["publicBaseUrl"].rstrip("/"),
      "GITEA_URL and PUBLIC_BASE_URL from the values")
env_names = [e["name"] for e in gateway["env"]]
check("REPLICA_ID" in env_names, "REPLICA_ID is the pod's name (fieldRef metadata.name)")

# ---- the drain and the grace ----------------------------------------------------
grace = pod["terminationGracePeriodSeconds"]
drain = int(configmap["SHUTDOWN_DRAIN_SECONDS"])
timeout = int(configmap["GITEA_TIMEOUT_SECONDS"])
sleep = values.get("preStopSleepSeconds") or 0
check(grace == sleep + drain + timeout + 5 + 1,
      "terminationGracePeriodSeconds %d = preStop %d + drain %d + GITEA_TIMEOUT_SECONDS %d + 5 + 1" % (grace, sleep, drain, timeout))
if sleep:
    check(gateway["lifecycle"]["preStop"]["sleep"]["seconds"] == sleep, "a preStop sleep of %d s" % sleep)
else:
    check("lifecycle" not in gateway, "no preStop hook")

# ---- probes -----------------------------------------------------------------------
probes = {k: gateway[k + "Probe"]["httpGet"] for k in ("liveness", "readiness", "startup")}
check(probes["liveness"]["path"] == "/health/live" and probes["readiness"]["path"] == "/health"
      and probes["startup"]["path"] == "/health/live", "liveness /health/live, readiness /health, startup /health/live")
check(all(p["port"] == "http" and p["httpHeaders"] == [{"name": "Host", "value": "localhost"}] for p in probes.values()),
      "every probe on the http port with Host: localhost (a pod IP as Host is 421)")

# ---- the image's promises ----------------------------------------------------------
psc, csc = pod["securityContext"], gateway["securityContext"]
check(psc["runAsNonRoot"] is True and psc["runAsUser"] == 65532 and psc["runAsGroup"] == 65532 and psc["fsGroup"] == 65532,
      "runAsNonRoot, user and group 65532, fsGroup 65532")
check(psc["seccompProfile"] == {"type": "RuntimeDefault"} and csc["seccompProfile"] == {"type": "RuntimeDefault"}, "seccomp RuntimeDefault")
check(csc["readOnlyRootFilesystem"] is True and csc["allowPrivilegeEscalation"] is False
      and csc["capabilities"] == {"drop": ["ALL"]} and csc.get("privileged") is False,
      "read-only root, no privilege escalation, every capability dropped")
check(pod["automountServiceAccountToken"] is False, "no service account token mounted")
mounts = {m["mountPath"]: m["name"] for m in gateway["volumeMounts"]}
volumes = {v["name"]: v for v in pod["volumes"]}
check("/tmp" in mounts and "emptyDir" in volumes[mounts["/tmp"]], "/tmp is an emptyDir (the root is read-only)")

# ---- the two modes -------------------------------------------------------------------
data = volumes[mounts["/data"]]
if postgres:
    replicas = values.get("replicaCount") or 2
    check(spec["replicas"] == replicas, "%d replicas" % spec["replicas"])
    check(spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
          "RollingUpdate, a new replica ready before an old one goes")
    check("emptyDir" in data, "DATA_DIR (the audit log) on an emptyDir")
    check(not of_kind("PersistentVolumeClaim"), "no PersistentVolumeClaim")
    pdb = one("PodDisruptionBudget")
    check(pdb["spec"]["maxUnavailable"] == values["podDisruptionBudget"]["maxUnavailable"], "a PodDisruptionBudget")
    check(len(pod["topologySpreadConstraints"]) >= 1, "topology spread constraints")
    if values["store"]["migration"]["mode"] == "job":
        job = one("Job")
        notes = job["metadata"]["annotations"]
        check(notes["helm.sh/hook"] == "pre-install,pre-upgrade", "the migration is a pre-install,pre-upgrade hook Job")
        check(notes["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded", "a succeeded Job is deleted, a failed one kept")
        jpod = job["spec"]["template"]["spec"]
        jc = jpod["containers"][0]
        check(jc["args"] == ["store", "migrate"] and jpod["restartPolicy"] == "Never", "the Job runs `store migrate` once")
        jenv = {e["name"]: e.get("value") for e in jc["env"]}
        check(all(jenv.get(k) == v for k, v in configmap.items() if k != "STORE_MIGRATE") and "envFrom" not in jc,
              "the Job carries the settings itself (no ConfigMap exists before an install)")
        check({e["name"] for e in jc["env"] if "secretKeyRef" in e.get("valueFrom", {})} == set(refs),
              "the Job reads the same secret keys")
        check(jc["securityContext"] == csc and jpod["securityContext"] == psc, "the Job has the gateway's security context")
        check("serviceAccountName" not in jpod and jpod["automountServiceAccountToken"] is False,
              "the Job needs no ServiceAccount (the release's does not exist yet before an install)")
        check("initContainers" not in pod, "no init container")
    else:
        check(not of_kind("Job"), "no Job")
        init = pod["initContainers"]
        check(len(init) == 1 and init[0]["args"] == ["store", "migrate"], "an init container runs `store migrate` before the gateway")
        check(init[0]["env"] == gateway["env"] and init[0]["envFrom"] == gateway["envFrom"], "with the gateway's settings and secrets")
else:
    check(spec["replicas"] == 1, "one replica")
    check(spec["strategy"] == {"type": "Recreate"}, "the Recreate strategy: never two processes on the SQLite file")
    claim = one("PersistentVolumeClaim")
    check(data == {"name": "data", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}, "DATA_DIR on the claim")
    check(claim["metadata"]["annotations"].get("helm.sh/resource-policy") == "keep", "the claim is kept on uninstall")
    check(not of_kind("Job") and not of_kind("PodDisruptionBudget"), "no migration Job, no PodDisruptionBudget")
    check("topologySpreadConstraints" not in pod, "no topology spread for one replica")

# ---- Service, Ingress, monitoring, network ----------------------------------------------------
service = one("Service")
ports = {p["name"]: p for p in service["spec"]["ports"]}
check(ports["http"]["targetPort"] == "http" and ports["metrics"]["targetPort"] == "metrics", "the Service's http and metrics ports")
if values["ingress"]["enabled"]:
    ingress = one("Ingress")
    host = ingress["spec"]["rules"][0]["host"]
    check("://" + host in values["publicBaseUrl"], "the Ingress serves publicBaseUrl's host %s" % host)
    check(configmap.get("FORWARDED_ALLOW_IPS") == ",".join(values["forwardedAllowIps"]) != "",
          "FORWARDED_ALLOW_IPS names the controller's network (%s): its idle connections get IDLE_CONNECTION_TIMEOUT_SECONDS" % configmap.get("FORWARDED_ALLOW_IPS"))
if values["serviceMonitor"]["enabled"]:
    monitor = one("ServiceMonitor")
    check(monitor["spec"]["jobLabel"] == "app.kubernetes.io/name" and service["metadata"]["labels"]["app.kubernetes.io/name"] == "aegis-gitea-mcp",
          "the ServiceMonitor's job is aegis-gitea-mcp (alerts.yml's)")
    check(monitor["spec"]["endpoints"][0]["port"] == "metrics", "it scrapes the metrics port")
if values["networkPolicy"]["enabled"]:
    policy = one("NetworkPolicy")
    rules = policy["spec"]["ingress"]
    check(any(r["ports"][0]["port"] == "metrics" and r.get("from") for r in rules), "the metrics port only from metricsFrom")
    check("Egress" in policy["spec"]["policyTypes"] and policy["spec"]["egress"][0]["ports"][0]["port"] == 53,
          "egress restricted to DNS and the given rules")
print("policy %s: %d passed" % (profile, passed))
