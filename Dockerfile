# Slipway's container image (docs/operations.md "Container image").
#
#   npm ci                      # installs and compiles dist/ (the `prepare` script)
#   DOCKER_BUILDKIT=1 docker build -t slipway .
#   docker run -d --name slipway -v slipway-data:/var/lib/slipway \
#     -p 5000:5000 -p 5001:5001 -p 5002:5002 -p 5003:5003 slipway
#
# Two stages: `deps` installs the production dependencies from package-lock.json (npm and its
# cache stay in that stage), the runtime stage holds node, those dependencies and dist/.
# BASE_IMAGE is any image with Node.js 24 (node and npm on PATH; the runtime stage needs only
# node and the C/C++ runtime libraries): the official slim image by default. Built and run by
# test/container/image.test.ts.
ARG BASE_IMAGE=node:24-bookworm-slim

FROM ${BASE_IMAGE} AS deps
# A mirror of the npm registry, when the build has no access to registry.npmjs.org (npm replaces
# the lock file's registry host with it).
ARG NPM_CONFIG_REGISTRY
COPY package.json package-lock.json /opt/slipway/
# No install scripts: lmdb's native module ships prebuilt, and `prepare` would compile sources
# this stage does not have (dist/ comes from the build context). The empty directory becomes
# the data volume, owned by the service user.
RUN npm ci --prefix /opt/slipway --omit=dev --ignore-scripts --no-audit --no-fund --no-update-notifier \
 && mkdir -p /opt/data

FROM ${BASE_IMAGE}
ENV NODE_ENV=production \
    SLIPWAY_DATA=/var/lib/slipway \
    SLIPWAY_HOST=0.0.0.0
COPY --from=deps /opt/slipway /opt/slipway
# dist/engine, dist/server, dist/workers, the auth host's views and deploy/container/ (.dockerignore admits no more).
COPY dist /opt/slipway/dist
# The auth host's page templates and styles, read from the source tree at run time.
COPY server/auth-host/views /opt/slipway/server/auth-host/views
COPY deploy/container /opt/slipway/deploy/container
COPY --from=deps --chown=10001:10001 /opt/data /var/lib/slipway
# A numeric user with no login and no other file: the data volume is the only place it writes.
USER 10001:10001
VOLUME ["/var/lib/slipway"]
# Registry, API, auth, upload; the admin listener (5004: metrics, /healthz, /readyz) stays on
# loopback unless SLIPWAY_ADMIN_HOST says otherwise.
EXPOSE 5000 5001 5002 5003
# /readyz on the admin listener, from inside the container (node itself: no shell, no curl).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "/opt/slipway/deploy/container/healthcheck.mjs"]
# SIGTERM drains (SLIPWAY_DRAIN_SECONDS, 30 s): stop with `docker stop -t 45`.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "--enable-source-maps", "--max-semi-space-size=16", "--heap-growing-percent=30", "/opt/slipway/dist/server/cli.js"]
CMD ["serve"]
