# kubetrain's one entry point. `make test` is what CI runs (.ci/run) and what the README says.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The repository root holds folders named api/ and operator/; never let Python import from it,
# or they would shadow the standard library's `operator` module.
export PYTHONSAFEPATH := 1

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

$(VENV)/.deps: pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "kubetrain needs Python 3.11 or newer"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip setuptools
	$(BIN)/pip install --quiet -e '.[test]' --config-settings editable_mode=strict
	touch $@

.PHONY: install
install: $(VENV)/.deps ## create .venv and install kubetrain with its test tools
	@# A strict editable install links files one by one: relink so new modules are seen.
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e . --config-settings editable_mode=strict

.PHONY: lint
lint: install ## ruff (lint and format) and mypy --strict, the packages and bench/
	$(BIN)/ruff check api operator devcluster client cli convert tests bench
	$(BIN)/ruff format --check api operator devcluster client cli convert tests bench
	$(BIN)/mypy -p kubetrain.api -p kubetrain.operator -p kubetrain.devcluster -p kubetrain.client -p kubetrain.cli -p kubetrain.convert
	@# bench/ is not installed: its entry points and their package, kubetrain_bench, checked as files.
	$(BIN)/mypy bench

.PHONY: manifests
manifests: install ## regenerate config/crd and config/defaults from the API types
	$(BIN)/kubetrain manifests

.PHONY: control-plane
control-plane: ## build (or reuse from ~/.cache/kubetrain) etcd, Kubernetes, kwok, kustomize and a real node's parts
	hack/build-control-plane.sh > .control-plane-path

# The cluster tiers get exactly the binaries the build script printed.
BIN_PATH = KUBETRAIN_BIN_PATH="$$(paste -sd: .control-plane-path)"
# The benchmarks' package, kubetrain_bench, lives in bench/ and is not installed; bench/ is put on the
# path for them alone (never the repository root).
BENCH_PATH = PYTHONPATH=$(CURDIR)/bench

# pytest-xdist's workers start as `python -c`, whose path begins with the working directory: the
# repository's operator/ would hide the standard library's operator module. -P (safe path) leaves it out.
XDIST = PYTHONSAFEPATH=1

.PHONY: unit
unit: install ## unit and property tests only (no cluster), on every core
	$(XDIST) $(BIN)/pytest -n auto tests/unit tests/property

# The realcode tier runs real torch, jax, tensorflow and Open MPI: pyproject's `realcode` extra,
# and these Debian packages (mpirun and mpicc; ssh and sshd between the MPI launcher and workers).
REALCODE_APT := openmpi-bin libopenmpi-dev openssh-client openssh-server

$(VENV)/.realcode-deps: $(VENV)/.deps pyproject.toml
	$(BIN)/pip install --quiet --progress-bar off -e '.[test,realcode]' --config-settings editable_mode=strict
	touch $@

.PHONY: realcode-deps
realcode-deps: $(VENV)/.realcode-deps ## install the realcode tier's frameworks (pip) and Open MPI and ssh (apt, as root)
	@# One apt at a time: `make test` runs this beside build-node.sh's own apt-get.
	@hack/apt-install.sh realcode-deps $(REALCODE_APT)

.PHONY: realcode
realcode: install realcode-deps ## the realcode tier only: real framework processes at kubetrain's rendezvous
	$(BIN)/pytest tests/realcode

.PHONY: images
images: install ## build the images real nodes hold (as root; cached), ahead of the node tier's first cluster
	@# As with a real node's parts (build-control-plane.sh): where they cannot be built, say so and go
	@# on; the node tier's first cluster then builds them and fails, naming what is missing.
	@if ! { hack/apt-install.sh images mmdebstrap && $(BIN)/kubetrain dev images --seed-images; }; then \
	  echo "==> WARNING: the real nodes' images were not built (above); the node tier builds them" >&2; fi

.PHONY: integration
integration: install control-plane ## the cluster tiers only (integration, e2e and node)
	$(BIN_PATH) $(BIN)/pytest tests/integration tests/e2e tests/node

.PHONY: node
node: install control-plane ## the node tier only: real kubelets and containers (as root)
	$(BIN_PATH) $(BIN)/pytest tests/node

.PHONY: test
test: ## everything CI runs: lint, types, and every test tier
	@# The cold path overlaps: the control plane's Go builds (both cores) run beside the realcode
	@# tier's pip and apt installs and the real nodes' images (downloads and unpacking, mostly), then
	@# lint; each line is prefixed with its job, and a failure of one stops the other and fails
	@# here, naming it (hack/concurrently.sh).
	hack/concurrently.sh control-plane '$(MAKE) --no-print-directory control-plane' \
	  'realcode-deps images lint' '$(MAKE) --no-print-directory realcode-deps images lint'
	$(BIN)/kubetrain manifests --check
	@# The unit tier on every core, alone (some of its tests time what they run): nothing shared, no
	@# cluster (pytest-xdist). The slowest tests of each run are printed, so that a tier that grows
	@# shows where.
	$(XDIST) $(BIN)/pytest -n auto --durations=15 $(PYTEST_ARGS) tests/unit
	@# Then three lanes, each run to its end and each failure named: the node tier; realcode,
	@# integration and e2e (each lane's clusters take free ports and node-network slots of their
	@# own); and the property tier (pure, no clock) on the CPU the cluster tiers leave idle, which
	@# wait on the processes they start far more than they compute (hack/background.sh).
	hack/concurrently.sh --keep-going \
	  node '$(BIN_PATH) $(BIN)/pytest --durations=15 $(PYTEST_ARGS) tests/node' \
	  'realcode integration e2e' '$(BIN_PATH) $(BIN)/pytest --durations=15 $(PYTEST_ARGS) tests/realcode tests/integration tests/e2e' \
	  property '$(XDIST) hack/background.sh $(BIN)/pytest -n auto --durations=15 --hypothesis-show-statistics $(PYTEST_ARGS) tests/property'

.PHONY: bench
bench: install control-plane ## runtime benchmark: 10,000 pods + Services + 2,500 jobs, RSS by cache, sync, no-op reconcile rate
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/runtime_bench.py $(BENCH_ARGS)

.PHONY: bench-jobs
bench-jobs: install control-plane ## jobs benchmark: 500 TrainingJobs to Running vs a plain client, API requests/job
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/jobs_bench.py $(BENCH_ARGS)

.PHONY: bench-writes
bench-writes: install control-plane ## write costs: kube-apiserver CPU per write of a TrainingJob, its Services and pods, vs bare pods
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/write_cost.py $(BENCH_ARGS)

.PHONY: bench-hostile
bench-hostile: install control-plane ## hostile input: 10,000 generated documents through the deployed webhooks
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/hostile_bench.py $(BENCH_ARGS)

.PHONY: bench-files
bench-files: install ## hostile files: 10,000 generated files through convert, render, submit, the client and the reader (no cluster)
	$(BENCH_PATH) $(BIN)/python bench/files_bench.py $(BENCH_ARGS)

.PHONY: bench-admission
bench-admission: install control-plane ## admission latency (p50/p99) with and without the webhook's dry run; CRD size
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/admission_bench.py $(BENCH_ARGS)

.PHONY: bench-restarts
bench-restarts: install control-plane ## restarts on real nodes: a rank's failure to every rank back in the rendezvous (p50 of 10)
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/restart_bench.py $(BENCH_ARGS)

.PHONY: bench-checkpoint
bench-checkpoint: install control-plane ## checkpoint before a stop on real nodes: steps redone per stop with and without, goodput
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/checkpoint_bench.py $(BENCH_ARGS)

.PHONY: bench-faults
bench-faults: install control-plane ## real faults on real nodes (nodes lost, containerd restarted, network cut, operator and apiserver killed): nothing lost
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/faults_bench.py $(BENCH_ARGS)

.PHONY: bench-ha
bench-ha: install control-plane ## two operator replicas under 2,000 jobs on kwok, the leader SIGKILLed: failover seconds, webhook answers lost
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/ha_bench.py $(BENCH_ARGS)

.PHONY: bench-churn
bench-churn: install control-plane ## jobs made and deleted on kwok (up to 100,000 or an hour; --rate, --lifetime): operator RSS, every per-job map empty after
	$(BIN_PATH) $(BENCH_PATH) $(BIN)/python bench/churn_bench.py $(BENCH_ARGS)

.PHONY: dev
dev: install control-plane ## a local control plane in the foreground (Ctrl-C stops it)
	$(BIN_PATH) $(BIN)/kubetrain dev up

SAMPLE ?= samples/v1beta1/pytorch-ddp.yaml

.PHONY: run
run: install control-plane ## a real node, config/default, a sample and its logs, shown like `kubectl get tj -w`
	$(BIN_PATH) $(BIN)/kubetrain dev run $(SAMPLE)

.PHONY: clean
clean: ## remove the virtualenv and caches
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis .control-plane-path
