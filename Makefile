# Entry points for a fresh clone; `make help` lists them.
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: help setup up down status demo test lint docs

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-7s %s\n", $$1, $$2}'

# What the pipeline itself runs from; `setup` adds the object stores the tests use: MinIO
# (built with Go) and Azurite (npm).
CORE := CDFBRIDGE_FETCH="kafka registry spark cds"

setup:  ## install a JDK, Maven, the Python env, the services' jars, MinIO and Azurite
	@bash stack/bootstrap.sh

up:  ## start Kafka, the schema registry and ClickHouse on 127.0.0.1
	@$(CORE) bash stack/bootstrap.sh
	@$(BIN)/cdfbridge-stack up

down:  ## stop the local services, the secured stack's too
	@$(BIN)/cdfbridge-stack down
	@$(BIN)/cdfbridge-stack down --secure

status:  ## say which local services are up
	@$(BIN)/cdfbridge-stack status

demo:  ## the whole pipeline on the local stack, ending with a ClickHouse = Delta check
	@$(CORE) bash stack/bootstrap.sh
	@bash stack/demo.sh

test: setup lint docs  ## lint, build the docs, then the whole test suite against real services
	@$(BIN)/python -m pytest; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi; exit $$rc

docs: setup  ## build the documentation site into site/ (strict: a broken link fails)
	@NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

lint: setup  ## ruff and mypy
	@$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy
