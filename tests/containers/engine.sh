# shellcheck shell=bash
# The podman engine of CI, shared by the scripts that run containers:
# tests/containers/run.sh (the image, the compose stack) and
# tests/kubernetes/kube-play.sh (the Helm chart under `podman kube play`).
# Sourced, not run. Both use the same storage, so the images run.sh builds
# are the ones kube-play.sh plays.
#
#   engine_configure CACHE RUN_DIR   writes the engine's configuration under
#                                    CACHE/etc and exports CONTAINERS_CONF and
#                                    CONTAINERS_STORAGE_CONF
#   engine_conmons CACHE             the conmon processes of containers in
#                                    CACHE's storage, one pid a line
#
# CACHE is ${AEGIS_CACHE_DIR:-~/.cache/aegis-gitea-mcp}/containers and
# RUN_DIR /run/aegis-gitea-mcp-containers in both scripts.

# The engine's configuration, all of it in the cache directory:
# - runc: crun fails here with "cgroups in hybrid mode not supported";
# - cgroupfs: there is no systemd;
# - ulimits: the machine caps open files at 20,000, and podman's default
#   of 1,048,576 fails with `setrlimit RLIMIT_NOFILE`;
# - storage, networks and the runtime state of their own, so that nothing
#   here touches another podman user's images or containers.
engine_configure() { # <cache> <run dir>
  local cache="$1" run_dir="$2"
  mkdir -p "$cache/etc" "$cache/storage" "$cache/networks" "$cache/tmp" "$cache/bases" "$run_dir"
  cat >"$cache/etc/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[network]
network_config_dir = "$cache/networks"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$run_dir/libpod"
# The conmon of an exec session (a health check, \`compose exec\`) waits this
# long for an API client to read its exit code, then exits (default 300 s).
exit_command_delay = 10
EOF
  cat >"$cache/etc/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$cache/storage"
runroot = "$run_dir/storage"
EOF
  export CONTAINERS_CONF="$cache/etc/containers.conf"
  export CONTAINERS_STORAGE_CONF="$cache/etc/storage.conf"
}

# The conmon processes of exec sessions outlive their container by up to
# exit_command_delay; a script waits for those of its storage (their command
# line names it), then ends them by their ids.
engine_conmons() { # <cache>
  local pid
  for pid in $(pgrep -x conmon 2>/dev/null || true); do
    grep -qaF -- "$1/storage/" "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
  done
  return 0
}
