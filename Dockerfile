# vgpu-sched container image. Stage 1 builds the binary with CMake on Debian bookworm (tests
# off); stage 2 is bookworm-slim with only the shared libraries it links, running as the
# non-root user 65532. Build: docker build -t vgpu-sched:0.1.0 .
FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      cmake make gcc libc6-dev pkg-config \
      libjansson-dev libyaml-dev libmicrohttpd-dev libgnutls28-dev libcurl4-openssl-dev libssl-dev \
      uthash-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVS_TESTS=OFF \
 && cmake --build build -j"$(nproc)" --target vgpu-sched \
 && strip --strip-debug build/vgpu-sched \
 && ./build/vgpu-sched version

FROM debian:bookworm-slim
COPY --from=build /src/build/vgpu-sched /usr/local/bin/vgpu-sched
# HAMi's chart runs this image as `scheduler --http_bind=0.0.0.0:443 ...` (command, not args)
# when only the image of its vgpu-scheduler-extender container is swapped (docs/migration.md):
# `scheduler` is a copy of the binary allowed to bind ports below 1024 as the non-root user
# (file capability; HAMi's pod keeps the runtime's default capabilities). vgpu-sched itself
# has none, so this chart's pod, which drops every capability, runs it unchanged.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libjansson4 libyaml-0-2 libmicrohttpd12 libgnutls30 libcurl4 libssl3 ca-certificates \
      libcap2-bin \
 && cp /usr/local/bin/vgpu-sched /usr/local/bin/scheduler \
 && setcap cap_net_bind_service=+ep /usr/local/bin/scheduler \
 && apt-get purge -y libcap2-bin && apt-get autoremove -y \
 && rm -rf /var/lib/apt/lists/*
# Numeric user: Kubernetes' runAsNonRoot can only verify a numeric USER.
USER 65532:65532
# 8443: filter/bind/webhook/healthz/readyz (HTTPS), 9395: /metrics (the chart's defaults).
EXPOSE 8443 9395
ENTRYPOINT ["/usr/local/bin/vgpu-sched", "serve"]
