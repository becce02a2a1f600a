# Builds a static manager image. (The project's machines have no Docker engine; this file is
# kept correct for release builds elsewhere.)
FROM golang:1.26 AS builder
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o manager ./cmd
# The kubectl plugin, for the dashboard's in-cluster mode (docs/dashboard.md).
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o kubectl-clusterstack ./cmd/kubectl-clusterstack

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
COPY --from=builder /workspace/kubectl-clusterstack .
USER 65532:65532
ENTRYPOINT ["/manager"]
