# The two commands a newcomer needs: `make run` and `make test`.
# Both find PostgreSQL on their own (see `perpetuity devdb`).
SHELL := /bin/bash
GO    ?= go
GOFILES = $(shell find . -name '*.go' -not -path './.data/*' -not -path './node_modules/*')

.PHONY: run test build vet fmtcheck generate bench clean deps reliability

run:
	$(GO) run ./cmd/perpetuity dev

build:
	$(GO) build -o bin/perpetuity ./cmd/perpetuity

fmtcheck:
	@out="$$(gofmt -l $(GOFILES))"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# deps installs what the tests need when missing: Debian's Chromium for the
# console's browser tests, Node.js and npm for the README's Node quick starts,
# nginx for e2e/reliability/sharded (the balancer in front of three replicas).
deps:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing nodejs and npm for the quick-start tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	  else echo "the quick-start tests need Node.js and npm: sudo apt-get install nodejs npm"; exit 1; fi; }
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "the browser tests need Chromium: sudo apt-get install chromium"; exit 1; fi; }
	@command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing nginx-light for the sharded balancer test"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; \
	  else echo "the sharded balancer test needs nginx: sudo apt-get install nginx-light"; exit 1; fi; }

generate:
	$(GO) tool templ generate

test: fmtcheck vet deps
	@DATABASE_URL="$$($(GO) run ./cmd/perpetuity devdb)" || exit 1; \
	export DATABASE_URL; \
	$(GO) test -count=1 -timeout 14m ./...

# bench writes BENCHMARKS.md (minutes); BENCH_QUICK=1 make bench is a smoke
# run of under a minute. The recall section needs ../shared/bench/locomo-dev.json
# and is skipped without it.
bench:
	@DATABASE_URL="$$($(GO) run ./cmd/perpetuity devdb)" || exit 1; \
	export DATABASE_URL; \
	locomo=../shared/bench/locomo-dev.json; [ -f "$$locomo" ] || locomo=; \
	$(GO) run ./cmd/perpetuity-bench bench all --locomo "$$locomo" --out BENCHMARKS.md

# reliability runs issue 9's suite in its full form (tens of minutes) and
# writes RELIABILITY.md; `make test` runs the same tests with small N.
reliability:
	@DATABASE_URL="$$($(GO) run ./cmd/perpetuity devdb)" || exit 1; \
	export DATABASE_URL; dir="$$(mktemp -d)"; \
	RELIABILITY=full RELIABILITY_DIR="$$dir" $(GO) test -count=1 -p 1 -timeout 85m -v ./e2e/reliability/...; st=$$?; \
	$(GO) run ./e2e/reliability/report --dir "$$dir" --out RELIABILITY.md --test-exit $$st

clean:
	rm -rf bin
