# svc: multi-stage image (Node 20, the runtime the product ships on), running as a non-root user.
# Not exercised by the test suite on the development machines (no container engine there); see README.
FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 builds from source when its prebuilt binary cannot be fetched; native/argon2 (the
# project's Argon2id addon) is always built, by the install script of npm ci.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY native ./native
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY workers ./workers
COPY bench ./bench
COPY migrations ./migrations
# The administration console (Preact + Vite), built into dist/admin by npm run build.
COPY admin ./admin
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    SECURITY_LOGGING_PRETTY_PRINT=false \
    SECURITY_LOGGING_FILE_LOGGING_ENABLED=false
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/migrations ./migrations
# Without it the workers fall back to @node-rs/argon2 (the same hashes, ~1.8x the CPU each).
COPY --from=build --chown=node:node /app/native/argon2/build/Release/argon2_reuse.node ./native/argon2/build/Release/argon2_reuse.node
COPY --from=build --chown=node:node /app/package.json ./package.json
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# SIGTERM drains in-flight requests, flushes usage counters and audit entries, then exits.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
