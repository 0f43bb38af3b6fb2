# The same images `make images` builds without Docker (hack/images): a
# static binary alone, no shell, run as a non-root user.
#   docker build --target manager -t lifeline-manager .
#   docker build --target bridge -t lifeline-bridge .
#   docker build --target node-agent -t lifeline-node-agent .
FROM golang:1.26 AS build
ARG TARGETARCH
ARG REVISION=unknown
WORKDIR /src
COPY . .
RUN for c in lifeline-manager lifeline-bridge lifeline-node-agent; do \
      CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH:-amd64} go build -trimpath -ldflags="-s -w" -o /out/$c/$c ./cmd/$c || exit 1; \
      mkdir -m 1777 /out/$c/tmp; \
    done

FROM scratch AS manager
ARG REVISION=unknown
LABEL org.opencontainers.image.title=lifeline-manager \
      org.opencontainers.image.source=https://github.com/lifeline-k8s/lifeline \
      org.opencontainers.image.revision=$REVISION \
      org.opencontainers.image.licenses=Apache-2.0
COPY --from=build /out/lifeline-manager/ /
USER 65532:65532
ENTRYPOINT ["/lifeline-manager"]

FROM scratch AS bridge
ARG REVISION=unknown
LABEL org.opencontainers.image.title=lifeline-bridge \
      org.opencontainers.image.source=https://github.com/lifeline-k8s/lifeline \
      org.opencontainers.image.revision=$REVISION \
      org.opencontainers.image.licenses=Apache-2.0
COPY --from=build /out/lifeline-bridge/ /
USER 65532:65532
ENTRYPOINT ["/lifeline-bridge"]

# The chart runs it as root (the runtime's socket is root's) with every
# capability dropped.
FROM scratch AS node-agent
ARG REVISION=unknown
LABEL org.opencontainers.image.title=lifeline-node-agent \
      org.opencontainers.image.source=https://github.com/lifeline-k8s/lifeline \
      org.opencontainers.image.revision=$REVISION \
      org.opencontainers.image.licenses=Apache-2.0
COPY --from=build /out/lifeline-node-agent/ /
USER 65532:65532
ENTRYPOINT ["/lifeline-node-agent"]
