# The two commands a newcomer needs: `make run` and `make test`.
# Both find PostgreSQL on their own (see `perpetuity devdb`).
SHELL := /bin/bash
GO    ?= go
GOFILES = $(shell find . -name '*.go' -not -path './.data/*' -not -path './node_modules/*')

.PHONY: run test build vet fmtcheck generate bench clean

run:
	$(GO) run ./cmd/perpetuity dev

build:
	$(GO) build -o bin/perpetuity ./cmd/perpetuity

fmtcheck:
	@out="$$(gofmt -l $(GOFILES))"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

test: fmtcheck vet
	@DATABASE_URL="$$($(GO) run ./cmd/perpetuity devdb)" || exit 1; \
	export DATABASE_URL; \
	$(GO) test -count=1 -timeout 14m ./...

clean:
	rm -rf bin
