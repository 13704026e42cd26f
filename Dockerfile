# syntax=docker/dockerfile:1
# Perpetuity as one static binary on a distroless base, running as non-root.
# Build: docker build -t perpetuity .   Run: see docker-compose.yml.
# No secrets are baked in: every setting comes from the environment at run time.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/perpetuity ./cmd/perpetuity

# static-debian12 carries CA certificates (for the providers' HTTPS) and
# tzdata, and nothing else: no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/perpetuity /usr/local/bin/perpetuity
# 65532 is distroless's "nonroot" user.
USER 65532:65532
ENV PERPETUITY_ADDR=:8080
EXPOSE 8080
ENTRYPOINT ["perpetuity"]
CMD ["serve"]
