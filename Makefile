# Entry points for a fresh clone; `make help` lists them.
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: help setup up down status demo test lint

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-7s %s\n", $$1, $$2}'

setup:  ## install a JDK and Maven if missing, the Python env, and the services' jars
	@bash stack/bootstrap.sh

up: setup  ## start Kafka, the schema registry and ClickHouse on 127.0.0.1
	@$(BIN)/cdfbridge-stack up

down:  ## stop the local services
	@$(BIN)/cdfbridge-stack down

status:  ## say which local services are up
	@$(BIN)/cdfbridge-stack status

demo: setup  ## the whole pipeline on the local stack, ending with a ClickHouse = Delta check
	@bash stack/demo.sh

test: setup  ## run the whole test suite against real services (exit 5, no tests, fails)
	@$(BIN)/python -m pytest; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

lint: setup  ## ruff and mypy
	@$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy
