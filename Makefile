# rsag: `make run` installs what is missing, builds and runs the default
# config on 4 ranks; `make test` runs everything CI runs.

GO      ?= go
NP      ?= 4
CONFIG  ?= configs/ch7.toml
# OUTPUT empty: each run gets a new dir, results/DATE-TIME-CONFIG, and
# results/latest links to it; a dir of your own that holds results is
# refused (add ARGS=-overwrite to replace them).
OUTPUT  ?=
ARGS    ?=
BIN     := rsag
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# cgo flags come from the user's own mpicc, not from paths we assume; the
# rsag_mpicc tag turns off the pkg-config lookup that plain go commands use.
# Exported, so that the go builds the tests run get the tag too. The flags
# themselves are read by each recipe that compiles (GO_MPI), after deps has
# installed an MPI: a make variable would ask mpicc when make starts, before
# deps, and on a fresh machine say "mpicc not found". They are added to go's
# own (go env: -O2 -g unless the user set CGO_CFLAGS), so rsag's C, its
# timed loops among them, is compiled optimized.
export GOFLAGS     := $(GOFLAGS) -tags=rsag_mpicc
export CGO_ENABLED := 1
GO_MPI := GO="$(GO)" scripts/with-mpi-flags.sh $(GO)

.PHONY: run build build-fast test test-full vet deps test-deps env clean

run: build
	scripts/mpirun.sh $(NP) ./$(BIN) -config $(CONFIG) $(if $(OUTPUT),-output-dir $(OUTPUT)) $(ARGS)

# The first build compiles rsag and its cgo against MPI: about 2 minutes on 2
# cores, seconds after that; it says so, since go build prints nothing.
build: deps
	@[ -x $(BIN) ] || echo "make: building ./$(BIN) (the first build takes about 2 minutes on 2 cores)"
	$(GO_MPI) build -ldflags "$(LDFLAGS)" -o $(BIN) .

# The short-cadence twin that make test's deadline tests run (e2e's
# fastRsag, slurm's stopped rank): the same build with -tags
# rsag_fastcadence added (internal/cadence: its beats, heartbeats and
# lingers FastBy times shorter), named rsag as the real one is (a test
# finds a job's ranks by their executable's name), beside it in .build/,
# which git ignores. Built here once, not linked inside a test. A -tags on
# the command line replaces GOFLAGS' own, so rsag_mpicc is named again.
# Only this line names the tag: the real binary, vet and the tests are
# built without it (GOFLAGS' last -tags is rsag_mpicc, which a user's
# GOFLAGS cannot override; makefile_test.go checks both).
FAST_BIN := .build/fast/$(BIN)
build-fast: deps
	$(GO_MPI) build -tags=rsag_mpicc,rsag_fastcadence -ldflags "$(LDFLAGS)" -o $(FAST_BIN) .

deps:
	@scripts/install-deps.sh
	@$(GO) mod download

# What make test needs besides: Chromium, to open report.html headless.
test-deps: deps
	@scripts/install-deps.sh --test

vet: deps
	$(GO_MPI) vet ./...

# The end-to-end and Slurm tests run the binary built here under mpirun and
# under a local one-node Slurm cluster, and open its report.html in Chromium.
# -parallel 4: most of e2e's parallel tests (refusals, signals, the hangs,
# the output dir) wait on mpirun starting and ending or on a deadline, not
# on the processors, so four at a time on two cores end sooner than go
# test's two (one a core). Eight at a time ended no sooner alone, and beside
# a second make test starved the processor-bound tests (the MPI sweep, the
# model) past their 3-minute bounds; the tests that measure run alone.
# It prints how many mpirun jobs the tests launched (scripts/count-launches.sh).
# RSAG_FAST_BIN is the short-cadence twin (build-fast).
test: test-deps build build-fast vet
	RSAG_BIN=$(CURDIR)/$(BIN) RSAG_FAST_BIN=$(CURDIR)/$(FAST_BIN) RSAG_SLURM_TESTS=1 GO="$(GO)" scripts/count-launches.sh \
	  scripts/with-mpi-flags.sh $(GO) test -count=1 -parallel 4 -timeout 20m ./...

# The full tier: the real sizes (ch7 at 256 MiB), the real cadences and the
# placement and fleet tables that make test samples; run and recorded
# before a release (docs/multi-node.md lists each fast test's full twin).
# No RSAG_FAST_BIN: its point is the real cadence, and with RSAG_TEST_FULL
# the tests that would run the twin run RSAG_BIN.
test-full: test-deps build vet
	RSAG_BIN=$(CURDIR)/$(BIN) RSAG_SLURM_TESTS=1 RSAG_TEST_FULL=1 GO="$(GO)" scripts/count-launches.sh \
	  scripts/with-mpi-flags.sh $(GO) test -count=1 -parallel 4 -timeout 60m ./...

# Plain go commands work with Open MPI's pkg-config file; for another MPI,
# or to match the Makefile's build exactly: eval "$$(make -s env)"
env:
	@GO="$(GO)" scripts/with-mpi-flags.sh sh -c 'echo "export GOFLAGS=\"$$GOFLAGS\" CGO_ENABLED=1 CGO_CFLAGS=\"$$CGO_CFLAGS\" CGO_LDFLAGS=\"$$CGO_LDFLAGS\""'

clean:
	rm -rf rsag results .build/fast
