# Ratiba Knowledge — `make run` serves the demo business, `make test` runs the whole suite.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed
NPM_STAMP := node_modules/.installed

.PHONY: setup run test stop migrate demo worker beat bench-help clean

setup: $(STAMP) $(NPM_STAMP) browser

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and exactly 2.13.0: any other spec pulls the CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

$(NPM_STAMP): package.json
	npm install --no-audit --no-fund --silent
	@touch $(NPM_STAMP)

# Headless Chromium for the browser tests (Debian's package; browser downloads do not work here).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

migrate: setup
	$(PY) manage.py migrate_schemas --shared --noinput
	$(PY) manage.py migrate_schemas --tenant --noinput

demo: migrate
	$(PY) manage.py demo_setup

run: demo
	@echo "Serving http://demo.localhost:$(PORT)/  (admin: http://demo.localhost:$(PORT)/admin/)"
	$(PY) manage.py runserver 127.0.0.1:$(PORT)

test: setup
	$(PY) -m pytest

worker: setup
	$(VENV)/bin/celery -A ratiba worker -l info --concurrency 2

beat: setup
	$(VENV)/bin/celery -A ratiba beat -l info

stop:
	@test -x $(PY) && $(PY) -c "from ratiba.embedded_db import stop_server; print('embedded PostgreSQL stopped' if stop_server() else 'embedded PostgreSQL was not running')" || true

clean: stop
	rm -rf $(VENV) .data node_modules staticfiles
