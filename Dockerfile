# syntax=docker/dockerfile:1.7@sha256:a57df69d0ea827fb7266491f2813635de6f17269be881f696fbfdf2d83dda33e
#
# Aegis Gitea MCP: one release binary built on a pinned Rust toolchain, run on a
# distroless image (glibc, libgcc, CA certificates; no shell, no package
# manager) as the unprivileged user 65532.
#
#   docker build -t aegis-gitea-mcp:local .
#
# How to run it, what the image expects from its environment, and how to
# refresh the digests below: docs/containers.md. Every base image is pinned by
# digest; scripts/pin-images.sh re-resolves them. No build argument carries a
# secret: settings and secrets reach the container at run time only.

# ---- build -------------------------------------------------------------------
# Rust 1.95.0, the toolchain CI builds with (Cargo.toml's rust-version is
# 1.94). Debian 12, the same glibc as the runtime image below.
FROM docker.io/library/rust:1.95.0-slim-bookworm@sha256:d7482085ff5b415f84dba5647ae71606650bdef00db7aeb69f4b3d170c3e4082 AS build

WORKDIR /src

# What `cargo build --bin aegis-gitea-mcp` reads, and nothing else
# (.dockerignore is an allow-list of the same paths). benches/ is here because
# Cargo.toml declares the bench targets and cargo checks their files exist.
COPY Cargo.toml Cargo.lock build.rs ./
COPY src ./src
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
COPY benches ./benches

# Cargo's registry and the target directory are cache mounts, kept between
# builds: a source change recompiles this crate, not its dependencies. The
# target directory is one per architecture; the binary is copied out of it,
# to /out, and the empty data directory the runtime stage takes as /data is
# made, mode 0700, in /out/rootfs. The sources are touched first: cargo
# rebuilds by file times, and a tree copied with older times than the cached
# target/ (an older commit's archive) would otherwise ship the last binary.
# The step only runs when the copied sources changed (the layer cache).
# The commit the binary names (--version, /health, aegis_build_info): the
# context has no .git, so the build passes it (tests/containers/run.sh).
ARG TARGETARCH
ARG AEGIS_BUILD_COMMIT=
ENV AEGIS_BUILD_COMMIT=${AEGIS_BUILD_COMMIT}
RUN --mount=type=cache,id=aegis-cargo-registry,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,id=aegis-cargo-git,target=/usr/local/cargo/git,sharing=locked \
    --mount=type=cache,id=aegis-target-${TARGETARCH},target=/src/target,sharing=locked \
    find build.rs src migrations templates static -type f -exec touch {} + \
 && cargo build --release --locked --bin aegis-gitea-mcp \
 && install -D -m 0755 target/release/aegis-gitea-mcp /out/aegis-gitea-mcp \
 && install -d -m 0700 /out/rootfs/data

# ---- runtime -----------------------------------------------------------------
# Distroless cc (Debian 12): glibc, libgcc_s, CA certificates, /etc/passwd with
# nonroot = 65532. The binary needs nothing else: rustls with ring (no
# OpenSSL), SQLite compiled in, templates and migrations embedded.
FROM gcr.io/distroless/cc-debian12:nonroot@sha256:9dac0a79194e45a7da0158a9c6da57b217585af0786db3845d1f0ec1a0dd182f AS runtime

LABEL org.opencontainers.image.title="aegis-gitea-mcp" \
      org.opencontainers.image.description="An MCP gateway that lets AI assistants work on a Gitea instance without holding anybody's keys" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.base.name="gcr.io/distroless/cc-debian12:nonroot" \
      org.opencontainers.image.base.digest="sha256:9dac0a79194e45a7da0158a9c6da57b217585af0786db3845d1f0ec1a0dd182f"

COPY --from=build /out/aegis-gitea-mcp /usr/local/bin/aegis-gitea-mcp
# DATA_DIR: the SQLite store and the audit log. Owned by the runtime user with
# mode 0700, so a named volume mounted here starts out the same. COPY copies a
# directory's contents, so /out/rootfs/ into / brings `data` as an entry, with
# the 0700 the build stage gave it; --chown applies to what is copied, not to
# the existing /. (`COPY --chmod=0700 /out/data /data` leaves the mode of
# /data itself to the builder: buildah, under `podman build`, applies the
# mode to the contents only and creates /data 0755.)
COPY --from=build --chown=65532:65532 /out/rootfs/ /

# MCP_HOST=0.0.0.0 so a published port reaches the gateway. The gateway refuses
# a non-loopback bind unless the environment also provides MCP_BEARER_TOKEN or
# OAuth (GITEA_OAUTH_CLIENT_ID, GITEA_OAUTH_CLIENT_SECRET, TOKEN_ENCRYPTION_KEY):
# without them the container exits with code 2 ("configuration error:
# MCP_HOST: …"). GITEA_URL is required too. `aegis-gitea-mcp setup` writes all
# of them (docs/containers.md).
ENV DATA_DIR=/data \
    MCP_HOST=0.0.0.0 \
    MCP_PORT=8080

USER 65532:65532
WORKDIR /home/nonroot
VOLUME ["/data"]
EXPOSE 8080

# The image has no shell, curl or wget: the binary probes itself.
# `aegis-gitea-mcp health` GETs http://127.0.0.1:$MCP_PORT/health (2 s to
# connect, 5 s in all, no proxy, no redirects) and exits 0 on a 200, 1 on
# anything else. /health is 200 when the process, the store (with OAuth) and
# Gitea answer, 503 otherwise; it accepts the loopback Host the probe sends.
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
  CMD ["/usr/local/bin/aegis-gitea-mcp", "health"]

STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/aegis-gitea-mcp"]
CMD ["serve"]
