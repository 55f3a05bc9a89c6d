# costguard: one target per habit. `make demo` and `make test` install what they need.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
VENV313 := .venv-313
SAM_VENV := .venv-sam
C7N_VENV := .venv-c7n
CHECKOV_VENV := .venv-checkov
BIN := $(VENV)/bin
SAM := $(SAM_VENV)/bin/sam
export SAM_CLI_TELEMETRY := 0
# Never talk to a real AWS account from tests or the demo by accident.
export AWS_EC2_METADATA_DISABLED := true

.PHONY: help demo test unit unit-py313 integration template lint format typecheck validate checkov render bench build deploy-all first-deploy uninstall clean

help:
	@echo "make demo       the whole governance cycle against a local emulated AWS account"
	@echo "make test       lint, typecheck, sam validate --lint, checkov, and every test"
	@echo "make bench      the benchmarks under bench/"
	@echo "make build      sam build (needs python3.13 on PATH)"
	@echo "make first-deploy  ask the few parameters a first deploy sets, then build and deploy"
	@echo "make uninstall  list (ARGS=--yes: remove) the stack and what costguard made at run time"

$(BIN)/.installed: requirements-dev.txt layers/costguard/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

$(SAM_VENV)/.installed: requirements-sam.txt
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/pip install --quiet -r requirements-sam.txt
	touch $@

$(CHECKOV_VENV)/.installed: requirements-checkov.txt
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/pip install --quiet -r requirements-checkov.txt
	touch $@

# Cloud Custodian for the side-by-side benchmark: its own environment, its own boto3.
$(C7N_VENV)/.installed: requirements-c7n.txt
	$(PYTHON) -m venv $(C7N_VENV)
	$(C7N_VENV)/bin/pip install --quiet --upgrade pip
	$(C7N_VENV)/bin/pip install --quiet -r requirements-c7n.txt
	touch $@

venv: $(BIN)/.installed $(SAM_VENV)/.installed

demo: $(BIN)/.installed
	$(BIN)/python -m demo

# The tests in as many processes as the machine has cores; a process that runs out of tests takes half of another's
# (worksteal: a module's fixtures may be made in both, but neither waits alone at the end: 699 s against 774 s
# for a module to a process, on 2 cores).
test: lint typecheck validate checkov
	$(BIN)/pytest -n auto --dist worksteal
	$(MAKE) --no-print-directory unit-py313

# The Lambda runtime is Python 3.13; the dev machines run 3.11. The unit tests run on both: 3.13 is
# taken from pyenv (or PATH), and skipped, with a message, on a machine that has none.
PY313 = $(shell v=$$(pyenv versions --bare 2>/dev/null | grep -E '^3\.13' | tail -1); \
	if [ -n "$$v" ]; then echo "$$(pyenv prefix $$v)/bin/python3.13"; else command -v python3.13 || true; fi)

unit-py313:
	@if [ -z "$(PY313)" ] || ! "$(PY313)" -c 'import sys' 2>/dev/null; then \
		echo "SKIPPED: unit tests on Python 3.13 (the Lambda runtime): no python3.13 on this machine"; \
	else \
		$(MAKE) --no-print-directory $(VENV313)/bin/.installed && $(VENV313)/bin/pytest -q -p no:cacheprovider -n auto tests/unit; \
	fi

$(VENV313)/bin/.installed: requirements-dev.txt layers/costguard/requirements.txt
	"$(PY313)" -m venv $(VENV313)
	$(VENV313)/bin/pip install --quiet --upgrade pip
	$(VENV313)/bin/pip install --quiet -r requirements-dev.txt
	touch $@

unit: $(BIN)/.installed
	$(BIN)/pytest tests/unit

integration: $(BIN)/.installed
	$(BIN)/pytest tests/integration

template: validate
	$(BIN)/pytest tests/template

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PYTHONPATH=layers/costguard $(BIN)/lint-imports --no-cache

format: $(BIN)/.installed
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: $(BIN)/.installed
	$(BIN)/mypy layers/costguard/costguard functions testing demo tests bench scripts
	$(BIN)/mypy --python-version 3.10 programs  # they run on the machines' python3 (3.6 up); 3.10 is mypy's oldest

# The programs that run on the machines (programs/), written into template.yaml's documents; a test fails when
# the committed template is not their render.
render: $(BIN)/.installed
	$(BIN)/python -m scripts.render_template

# sam validate --lint runs cfn-lint's errors and warnings; the informational findings are checked too.
validate: $(SAM_VENV)/.installed
	$(SAM) validate --lint
	$(SAM_VENV)/bin/cfn-lint --include-checks I -- template.yaml

# The template's security checks. Every check the template does not pass is skipped by name, with the
# reason, in .checkov.yaml (account-wide choices) or in the resource's own Metadata (one resource).
checkov: $(CHECKOV_VENV)/.installed
	$(CHECKOV_VENV)/bin/checkov --config-file .checkov.yaml

bench: $(BIN)/.installed $(C7N_VENV)/.installed
	$(BIN)/python -m bench

build: $(SAM_VENV)/.installed
	PYENV_VERSION=$$(pyenv versions --bare 2>/dev/null | grep -E '^3\.(11|13)' | tr '\n' ':') $(SAM) build

# One `sam deploy` per account, in turn: `make deploy-all ENVS="hub training sandbox"`. Each name is a
# samconfig.toml environment ([<name>.deploy.parameters]) and the AWS CLI profile of that account.
deploy-all: build
	@test -n "$(ENVS)" || { echo 'ENVS="env1 env2 ..." names the samconfig.toml environments to deploy'; exit 2; }
	@for env in $(ENVS); do echo "== $$env"; $(SAM) deploy --config-env $$env --profile $$env || exit 1; done

# The first deploy of an account: asks only the parameters samconfig.toml's default environment lists (the few a
# first deploy sets; `sam deploy --guided` would ask all of the template's), writes them there, builds, deploys.
first-deploy: $(BIN)/.installed $(SAM_VENV)/.installed
	$(BIN)/python -m scripts.first_deploy
	$(MAKE) --no-print-directory build
	$(SAM) deploy

# What `sam delete` leaves and what costguard made at run time (docs/deploying.md#uninstall). A dry run that lists
# what it would remove and keep; ARGS="--yes" removes it, "--delete-data" also the retained table, bucket and the
# tags people set. The stack, region and profile come from samconfig.toml (ARGS="--config-env hub" picks another
# environment) or ARGS="--stack-name ... --region ... --profile ...".
uninstall: $(BIN)/.installed
	PYTHONPATH=layers/costguard $(BIN)/python -m scripts.uninstall $(ARGS)

# The organization (docs/deploying.md#an-organization): template.yaml as plain CloudFormation for a service-managed
# StackSet (which refuses a transform), the SAM translator run offline (aws-sam-translator, pinned in
# requirements-dev.txt at the version aws-sam-cli pins); checked like `validate` and `checkov` check template.yaml.
ORG_TEMPLATE := .aws-sam/org/template.json
.PHONY: org-template org-deploy org-uninstall

org-template: $(BIN)/.installed $(SAM_VENV)/.installed $(CHECKOV_VENV)/.installed
	$(BIN)/python -m scripts.translate_template --output $(ORG_TEMPLATE)
	$(SAM_VENV)/bin/cfn-lint --include-checks I -- $(ORG_TEMPLATE) scripts/org/artifact-bucket.yaml
	$(CHECKOV_VENV)/bin/checkov --config-file .checkov.yaml -f $(ORG_TEMPLATE) -f scripts/org/artifact-bucket.yaml

# make org-deploy ARGS="--region <hub region> --regions r1,r2 --units ou-...,ou-... --bucket-prefix <name> --parameter K=V
# --hub-parameter K=V" (docs/deploying.md#an-organization): prints what it will do and asks (ARGS+=--yes skips it).
org-deploy: build org-template
	PYTHONPATH=layers/costguard $(BIN)/python -m scripts.org_deploy deploy --release costguard/$$(git rev-parse --short=12 HEAD) $(ARGS)

# make org-uninstall ARGS="--region <hub region>": the StackSet's stacks, then the StackSet; says what outlives them.
org-uninstall: $(BIN)/.installed
	PYTHONPATH=layers/costguard $(BIN)/python -m scripts.org_deploy uninstall $(ARGS)

clean:
	rm -rf $(VENV) $(VENV313) $(SAM_VENV) $(C7N_VENV) $(CHECKOV_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache demo-output
