# molprop — set-up, service and tests. Every target creates its own environment.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8000
STAMP  := $(VENV)/.installed

.PHONY: install serve test lint typecheck docs bench pretrained pretrained-admet foundation-data moleculeace-data clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "torch==2.13.0"
	$(PY) -m pip install -q -e ".[service,onnx,hpopt,pyg,notebooks,dev]"
	touch $(STAMP)

serve: install
	MOLPROP_MODEL_DIR=$${MOLPROP_MODEL_DIR:-pretrained} $(VENV)/bin/uvicorn api.main:app --host 127.0.0.1 --port $(PORT)

test: install
	-@bash scripts/install-system-deps.sh --check
	$(PY) -m pytest -q -p no:cacheprovider --durations=25 tests

docs: install
	$(PY) -m pip install -q -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# ruff over the whole tree (notebooks included): lint, then the format check
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy over molprop/ and api/ ([tool.mypy] in pyproject.toml)
typecheck: install
	$(VENV)/bin/mypy

bench: install
	$(PY) -m pip install -q -e ".[bench,pyg]"
	$(PY) -m pip install -q --no-deps "chemprop==2.3.1"
	$(PY) -m benchmarks all

# the ADMET models first: `solubility` follows the split of admet_regression (its split.csv)
pretrained: install
	$(PY) -m molprop.pretrained_admet
	$(PY) -m molprop.pretrained_recipes

# the multitask ADMET models, fine-tuned from pretrained/foundation on data/admet
pretrained-admet: install
	$(PY) -m molprop.pretrained_admet

# the foundation model's corpus + descriptor labels, outside the repository; rebuilt
# byte-identically (fixed source order, seeded order, no timestamps)
FOUNDATION_DATA ?= ../foundation-data
SHARED_DATA     ?= ../shared/data
FOUNDATION_LABELS ?= 300000
foundation-data: install
	mkdir -p $(FOUNDATION_DATA)/raw
	test -f $(FOUNDATION_DATA)/raw/molsets-0.3.1-py3-none-any.whl || \
		$(PY) -m pip download -q --no-deps "molsets==0.3.1" -d $(FOUNDATION_DATA)/raw
	nice -n 5 $(VENV)/bin/molprop foundation data --out $(FOUNDATION_DATA) \
		--moses-wheel $(FOUNDATION_DATA)/raw/molsets-0.3.1-py3-none-any.whl \
		--shared-data $(SHARED_DATA) --labels $(FOUNDATION_LABELS) --workers 2

# the 30 MoleculeACE sets (CSV files inside the moleculeace wheel, MIT), outside the repository;
# benchmarks/SOURCES.md records the wheel's sha256
MOLECULEACE_DATA ?= ../moleculeace-data
moleculeace-data: install
	mkdir -p $(MOLECULEACE_DATA)/raw
	test -f $(MOLECULEACE_DATA)/raw/MoleculeACE-3.0.0-py3-none-any.whl || \
		$(PY) -m pip download -q --no-deps "moleculeace==3.0.0" -d $(MOLECULEACE_DATA)/raw
	$(PY) -m benchmarks.moleculeace --data $(MOLECULEACE_DATA) \
		--extract $(MOLECULEACE_DATA)/raw/MoleculeACE-3.0.0-py3-none-any.whl

clean:
	rm -rf $(VENV) build *.egg-info
