# zh→en NMT with attention. `make train` sets everything up and trains the default experiment;
# `make test` runs the test suite. Every stage takes CONFIG=configs/<experiment>.yaml, and
# ARGS="section.key=value ..." of which each stage gets the keys it reads (see ARGS below).
# `make setup` needs a C compiler (eflomal builds from source).
#
#   make train CONFIG=configs/tatoeba_dot.yaml ARGS="training.lr=3e-4"
#   make eval ARGS="eval.channel_weight=0"       # scored without the channel model; no retraining
#   make student ARGS="training.max_minutes=60"  # the student's minutes; the teacher's: TEACHER_ARGS
#   make train NPROC=3                  # the default's 3 models, a torchrun process each (DDP)
#   make setup TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"   # a GPU build

CONFIG  ?= configs/tatoeba.yaml
STUDENT ?= configs/tatoeba_student.yaml
ARGS    ?=
TEACHER_ARGS ?=
PYTHON  ?= python3
TORCH   ?= torch==2.13.0
DATA_MIRROR ?= ../shared/data
NPROC   ?= 1
NNODES  ?= 1
NODE_RANK ?= 0
RDZV_ENDPOINT ?= localhost:29500
INPUT   ?=
GOLD    ?= $(DATA_MIRROR)/align/gold.tsv
ALIGNER ?= attention
WEIGHTS ?=
METHOD  ?=
PORT    ?= 6006
SERVE_PORT ?= 8000
A       ?=
B       ?=

VENV    := .venv
PY      := $(VENV)/bin/python
CORPUS  := data/raw/cmn-eng/cmn.txt
RUNS    := runs

# ARGS, stage by stage (nmt/config/stages.py says which keys each stage reads): name, seed,
# runs_dir and data.* reach every stage; model.*, training.* and distill.* reach train and the
# stages that load the trained run; search.*, eval.* and export.* reach the stages that decode,
# never train (`make eval ARGS="search.beam_size=10"` leaves the run's training and its
# config.yaml as they were); serve.* reaches serve alone. Options (-v, --checkpoint FILE, ...)
# go to the target's own script, not to the stages run first. A key that no stage of the
# target reads stops make before any work. `make student`: ARGS go to the student's stages and
# TEACHER_ARGS to the teacher's prepare and train (e.g. TEACHER_ARGS="training.max_minutes=40").
# The tool needs the standard library alone: .venv's Python where there is one, else PYTHON.
STAGE_TOOL := PYTHONPATH='$(CURDIR)' $(if $(wildcard $(PY)),$(PY),$(PYTHON)) -m nmt.config.stages
# $(call args_for,STAGE,WORDS): the words STAGE gets (its keys and the options); keys_for: its keys
args_for = $(if $(strip $(2)),$(shell $(STAGE_TOOL) pick $(1) -- $(2)))
keys_for = $(if $(strip $(2)),$(shell $(STAGE_TOOL) pick --keys $(1) -- $(2)))
# The stages each target runs with ARGS (make student: the student's; TEACHER_ARGS: the teacher's)
STAGES_prepare    := prepare
STAGES_train      := prepare train
STAGES_eval       := prepare train evaluate
STAGES_tune       := prepare train tune
STAGES_student    := train evaluate
STAGES_translate  := translate
STAGES_serve      := serve
STAGES_align      := align
STAGES_align-eval := prepare align
STAGES_bench      := prepare train evaluate align serve
# $(call refusal,VARIABLE,STAGES): why VARIABLE's keys cannot run through STAGES; empty if they can
refusal = $(filter-out ok,$(if $(and $(strip $($(1))),$(strip $(2))),$(shell \
	$(STAGE_TOOL) check $(1) '$(MAKECMDGOALS)' $(2) -- $($(1)) 2>&1)))
ARGS_REFUSAL := $(call refusal,ARGS,$(foreach goal,$(MAKECMDGOALS),$(STAGES_$(goal))))
TEACHER_REFUSAL := $(call refusal,TEACHER_ARGS,$(if $(filter student,$(MAKECMDGOALS)),prepare train))
$(if $(ARGS_REFUSAL),$(error $(ARGS_REFUSAL)))
$(if $(TEACHER_REFUSAL),$(error $(TEACHER_REFUSAL)))
ifneq ($(and $(filter command line,$(origin TEACHER_ARGS)),$(strip $(TEACHER_ARGS))),)
ifeq ($(filter student,$(MAKECMDGOALS)),)
$(error TEACHER_ARGS is read by make student alone (its teacher's prepare and train): leave it \
	out, or give its keys in ARGS)
endif
endif

# The ARGS of the run that prepare and train work on: the teacher's under make student. Run
# first for another target, they get their keys of it and none of its options.
RUN_ARGS = $(ARGS)
student: RUN_ARGS = $(TEACHER_ARGS)
PREPARE_ARGS = $(call args_for,prepare,$(RUN_ARGS))
TRAIN_ARGS = $(call args_for,train,$(RUN_ARGS))
train eval tune student align-eval bench: PREPARE_ARGS = $(call keys_for,prepare,$(RUN_ARGS))
eval tune: TRAIN_ARGS = $(call keys_for,train,$(RUN_ARGS))

.PHONY: setup data prepare train student tune eval translate serve align align-eval report compare docs tensorboard lint test test-fast bench clean help

help: ## every target, one line each
	@awk '!/^#/ {exit} {print}' Makefile
	@awk -F ':.*## ' '/^[a-z-]+:.*## / {printf "  make %-12s %s\n", $$1, $$2}' Makefile

# eflomal (the align extra) compiles from source: say so before pip fails deep in its build
$(VENV)/.installed: pyproject.toml
	@command -v "$${CC:-cc}" >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || { \
		echo "make setup: no C compiler (cc or gcc) found; eflomal builds from source. Install" \
			"one: on Debian/Ubuntu sudo apt-get install build-essential, on macOS" \
			"xcode-select --install" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e '.[test,align,serve,engine]'
	touch $@

setup: $(VENV)/.installed ## create .venv and install PyTorch (the TORCH variable) and this package

$(CORPUS): | $(VENV)/.installed
	$(PY) scripts/fetch_data.py --mirror $(DATA_MIRROR) --dest data/raw

data: $(CORPUS) ## get the Tatoeba corpus into data/raw/ (from DATA_MIRROR, else the public export)

prepare: data ## clean, split, segment and index the corpus: data/prepared/<hash>/
	$(PY) scripts/prepare.py $(CONFIG) $(PREPARE_ARGS)

# One machine: --standalone picks a free port, so two jobs never join each other by mistake.
# Several: the static rendezvous keeps NODE_RANK (c10d would ignore it), so rank 0, which writes
# runs/, is always on NODE_RANK 0, the machine RDZV_ENDPOINT names. See docs/distributed.md.
ifeq ($(NPROC)$(NNODES),11)
TRAIN_CMD := $(PY) scripts/train.py
else ifeq ($(NNODES),1)
TRAIN_CMD := $(VENV)/bin/torchrun --standalone --nproc-per-node $(NPROC) scripts/train.py
else
TRAIN_CMD := $(VENV)/bin/torchrun --nnodes $(NNODES) --nproc-per-node $(NPROC) --node-rank $(NODE_RANK) \
	--rdzv-backend static --rdzv-endpoint $(RDZV_ENDPOINT) scripts/train.py
endif

train: prepare ## set up, get the data, prepare it and train CONFIG (default: the best recipe, 30 min)
	$(TRAIN_CMD) $(CONFIG) $(TRAIN_ARGS)

# The default run (CONFIG) distilled into one small Transformer (STUDENT): trained on the
# teacher's translations of the training sources, exported for CTranslate2 in int8 and scored on
# the test split. Then `make eval|translate|serve CONFIG=$(STUDENT)` decode with the engine.
# ARGS reach the student's train and evaluate alone; TEACHER_ARGS the teacher's make train.
student: train ## distil the trained default into a small Transformer on CTranslate2, then score it
	$(PY) scripts/train.py $(STUDENT) $(call args_for,train,$(ARGS))
	$(PY) scripts/evaluate.py $(STUDENT) $(call args_for,evaluate,$(ARGS))

# Training resumes or, when the run has finished, returns at once: eval always scores a trained model.
eval: train ## score CONFIG's run on its test split: BLEU ± 95%, chrF, length (train first if needed)
	$(PY) scripts/evaluate.py $(CONFIG) $(call args_for,evaluate,$(ARGS))

translate: setup ## translate INPUT=file.zh (or stdin, or type interactively) with CONFIG's run
	$(PY) scripts/translate.py $(CONFIG) $(call args_for,translate,$(ARGS)) $(if $(INPUT),--input $(INPUT))

# The search (length penalty, coverage, word reward, rerank weights) chosen on the dev split with
# the trained models: runs/<name>/search.tuned.yaml, which eval, translate and serve then use
tune: train ## choose the search settings and rerank weights on the dev split
	$(PY) scripts/tune.py $(CONFIG) $(call args_for,tune,$(ARGS))

# A local web page on http://127.0.0.1:$(SERVE_PORT)/: translate, see the attention and the links
serve: setup ## a local web page and JSON API on SERVE_PORT: translations, attention, links
	$(PY) scripts/serve.py $(CONFIG) $(call args_for,serve,$(ARGS)) --port $(SERVE_PORT)

# Word alignment in Pharaoh format (INPUT: Chinese<TAB>English lines); align-eval scores the
# gold links: runs/<name>/alignment.json, or runs/eflomal-char/ with ALIGNER=eflomal.
# No WEIGHTS: the run's best measured links (both directions where it has a channel model, else
# a recurrent model's posterior); WEIGHTS=attention|posterior|bidirectional [METHOD=...] to choose
# (ARGS="--reverse PATH": another reverse model for bidirectional).
ALIGN_OPTIONS = --aligner $(ALIGNER) $(if $(WEIGHTS),--weights $(WEIGHTS)) $(if $(METHOD),--method $(METHOD))
align: setup ## word links of INPUT (Chinese<TAB>English lines), Pharaoh format
	$(PY) scripts/align.py $(CONFIG) $(call args_for,align,$(ARGS)) $(ALIGN_OPTIONS) $(if $(INPUT),--input $(INPUT))

align-eval: prepare ## attention as alignment: AER against the gold links (GOLD)
	$(PY) scripts/align.py $(CONFIG) $(call args_for,align,$(ARGS)) $(ALIGN_OPTIONS) --gold $(GOLD)

# ARGS="--markdown --commands": a table for the README, and how each run was made
report: setup ## one table of every run under runs/
	$(PY) scripts/report.py --runs $(RUNS) $(ARGS)

# Is run B better than run A on the same split? The paired bootstrap: difference, 95% interval, p
compare: setup ## is run B better than run A? paired bootstrap on the same split (A=... B=...)
	$(PY) scripts/compare.py $(A) $(B)

# docs/config.md from the config schema; the runs under runs/ merged into docs/results.jsonl, and
# the tables of docs/results.md, README.md and docs/alignment.md written from it
docs: setup ## regenerate docs/config.md, docs/results.jsonl and the results tables
	$(PY) scripts/config_docs.py > docs/config.md.tmp && mv docs/config.md.tmp docs/config.md
	$(PY) scripts/report.py --runs $(RUNS) --docs docs/results.md --readme README.md \
		--alignment docs/alignment.md

tensorboard: setup ## curves and attention heatmaps of runs/ on PORT
	$(VENV)/bin/tensorboard --logdir $(RUNS) --port $(PORT)

lint: setup ## ruff and mypy over the code
	$(VENV)/bin/ruff check nmt scripts bench tests
	$(VENV)/bin/mypy  # the files and settings: [tool.mypy] in pyproject.toml

test: lint ## lint and the whole test suite (what CI runs)
	$(PY) -m pytest tests

# The unit tests only (under a minute): not those marked e2e, which run the real stages
test-fast: setup ## the unit tests alone (no end-to-end stages)
	$(PY) -m pytest tests -m "not e2e"

bench: prepare ## speed of prepare, training, decoding, alignment and serving on this machine
	$(PY) bench/bench_prepare.py $(CORPUS)
	$(PY) bench/bench_train.py $(CONFIG) $(call args_for,train,$(ARGS))
	$(PY) bench/bench_decode.py $(CONFIG) $(call args_for,evaluate,$(ARGS))
	$(PY) bench/bench_align.py $(CONFIG) $(call args_for,align,$(ARGS))
	$(PY) bench/bench_serve.py $(CONFIG) $(call args_for,serve,$(ARGS))

clean: ## remove runs/, data/prepared/ and caches
	rm -rf $(RUNS) data/prepared .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
