# Quick start: `make demo` then `make test`. Both create .venv on first use; each installs only what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test fuzz lint lint-imports typecheck check bench clean docs test-oracles wheel test-wheel

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# one stamp per extra: the demo needs matplotlib only; tests add pytest, hypothesis and the notebook kernel;
# lint adds ruff, mypy and import-linter
$(VENV)/.installed-%: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[$*]'
	touch $@

demo: $(VENV)/.installed-plot
	$(PY) -m layoutkit.demo
	$(VENV)/bin/layoutkit infer examples/gemm.py --plot out/ --emit out/

test: $(VENV)/.installed-test
	$(PY) -m pytest -n auto

# the hostile-input suite at length (10,000 examples per test; FUZZ_EXAMPLES=N to change); `make test`
# runs the same tests under the bounded, derandomised CI profile
fuzz: $(VENV)/.installed-test
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -p no:cacheprovider -n auto tests/fuzz

# every CUDA kernel the tests emit, run on the CPU harness (layoutkit.testing.cuda_cpu) against numpy;
# `make test` runs a representative subset
.PHONY: test-ascend-cpu
test-ascend-cpu: $(VENV)/.installed-test
	LAYOUTKIT_ASCEND_CPU_LARGE=1 $(PY) -m pytest -p no:cacheprovider -n 2 tests/test_ascend_cpu_model.py

.PHONY: test-cuda-cpu
test-cuda-cpu: $(VENV)/.installed-test
	LAYOUTKIT_CUDA_CPU_SWEEP=1 $(PY) -m pytest -p no:cacheprovider -n auto tests/test_cuda_cpu.py tests/test_hopper*.py

lint: $(VENV)/.installed-lint
	$(VENV)/bin/ruff check layoutkit tests benchmarks examples tools docs

# mypy follows every import of the package: hypothesis (testing/) and matplotlib (plot/) come with the tests
typecheck: $(VENV)/.installed-test $(VENV)/.installed-lint
	$(PY) tools/check_types.py

# what CI runs besides the tests
check: lint lint-imports typecheck docs

# the documentation site (build/docs/index.html), built with Sphinx (docs/conf.py): the pages of docs/, an API
# reference generated from the docstrings (one page per public package), the notebooks executed with their
# figures; warnings are errors. Built beside build/docs/ and copied over it only when the build succeeded.
docs: $(VENV)/.installed-docs
	$(VENV)/bin/sphinx-build -b html -W --keep-going -q -d build/.doctrees docs build/.docs-html
	rm -rf build/docs && cp -R build/.docs-html build/docs

# the sdist and the wheel (dist/), built with `build` in an isolated environment
wheel: | $(PY)
	$(PY) -m pip install -q build
	rm -rf dist
	$(PY) -m build --outdir dist .

# the wheel installed into a fresh environment, away from the repository: the demo, a proof and a kernel on each
# CPU harness run from it (tests/test_wheel.py; needs PyPI or a pip cache for numpy, sympy, islpy, networkx)
test-wheel: wheel $(VENV)/.installed-test
	LAYOUTKIT_WHEEL=$$(ls dist/*.whl) $(PY) -m pytest -p no:cacheprovider tests/test_wheel.py

# The layer contract in pyproject.toml ([tool.importlinter]): imports only go down, infer and cost know no target.
lint-imports: $(VENV)/.installed-lint
	$(VENV)/bin/lint-imports

# Benchmarks run beside pycute and TileLang when they install (a separate environment, so the
# test environment never depends on them); anything that does not install is reported as skipped.
BENCH_VENV := .venv-bench
BENCH_ARGS ?=  # e.g. make bench BENCH_ARGS="--only domain tilelang-infer" (or --quick)
bench: $(VENV)/.installed-plot
	@test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	@$(BENCH_VENV)/bin/python -m pip install -q -e '.[plot]' || true
	@$(BENCH_VENV)/bin/python -m pip install -q nvidia-cutlass==4.2.0.0 || echo "pycute not installable: skipped"
	@$(BENCH_VENV)/bin/python -m pip install -q tilelang==0.1.15 torch==2.13.0 || echo "tilelang not installable: skipped"
	$(BENCH_VENV)/bin/python benchmarks/run.py --markdown benchmarks/RESULTS.md $(BENCH_ARGS)

# The differential tests against pycute (nvidia-cutlass) and Triton's LinearLayout bindings, in their own
# environment (the default test environment never depends on them; there these tests skip).
ORACLE_VENV := .venv-oracles
.PHONY: test-oracles
test-oracles:
	@test -x $(ORACLE_VENV)/bin/python || $(PYTHON) -m venv $(ORACLE_VENV)
	$(ORACLE_VENV)/bin/python -m pip install -q -e '.[test,cute]' nvidia-cutlass==4.2.0.0 triton==3.9.0
	$(ORACLE_VENV)/bin/python -m pytest -p no:cacheprovider -n auto -m oracle tests

# The TileLang adapter's tests against TileLang itself, in their own environment (TileLang and torch
# are GB-sized downloads the default test environment never needs). TILELANG_SRC=<a checkout of
# TileLang's repository> adds its own examples/ and testing/python/ kernels (tools/tilelang_suite.py;
# TILELANG_SUITE_ONLY="examples/gemm ..." limits the files).
TILELANG_VENV := .venv-tilelang
.PHONY: test-tilelang
test-tilelang:
	@test -x $(TILELANG_VENV)/bin/python || $(PYTHON) -m venv $(TILELANG_VENV)
	$(TILELANG_VENV)/bin/python -m pip install -q --upgrade pip
	$(TILELANG_VENV)/bin/python -m pip install -q -e '.[test,tilelang]'
	@# what TileLang's examples import for their reference implementations (only imported: no GPU here)
	@test -z "$(TILELANG_SRC)" || $(TILELANG_VENV)/bin/python -m pip install -q einops triton==3.9.0 || true
	@test -z "$(TILELANG_SRC)" || $(TILELANG_VENV)/bin/python -m pip install -q --no-deps fla-core==0.6.0 || true
	$(TILELANG_VENV)/bin/python -m pytest -p no:cacheprovider -n auto tests/test_frontend_tilelang.py \
		tests/test_frontend_tilelang_pass.py tests/test_tilelang_suite.py \
		tests/test_frontend_tilelang_errors.py tests/test_frontend_tilelang_reads.py tests/test_fragment_oracle.py \
		tests/test_frontend_tilelang_bounds.py tests/test_frontend_tilelang_tmem.py tests/test_frontend_tilelang_gemm_sp.py \
		tests/test_reducers.py tests/test_frontend_tilelang_gemm_scopes.py tests/test_frontend_tilelang_inner.py \
		tests/test_frontend_tilelang_differences.py \
		tests/test_frontend_tilelang_loops.py tests/test_frontend_tilelang_gemm.py \
		tests/test_frontend_tilelang_threads.py

# the TileLang pass under load: 8 threads x 50 lowerings, each in its own layoutkit_inference() block (slow)
.PHONY: test-tilelang-threads
test-tilelang-threads:
	@test -x $(TILELANG_VENV)/bin/python || $(PYTHON) -m venv $(TILELANG_VENV)
	$(TILELANG_VENV)/bin/python -m pip install -q -e '.[test,tilelang]'
	LAYOUTKIT_TILELANG_THREADS=1 $(TILELANG_VENV)/bin/python -m pytest -p no:cacheprovider \
		tests/test_frontend_tilelang_threads.py

# The Mosaic GPU adapter (layoutkit as the layout-inference pass of JAX's Pallas on NVIDIA GPUs) against
# jax/jaxlib 0.10.2, in its own environment; no GPU needed. MOSAIC_TESTS=<a JAX checkout at tag jax-v0.10.2>
# also runs Mosaic's own deviceless layout-inference tests with layoutkit's pass swapped in
# (tools/mosaic_layout_tests.py), and the Pallas kernels are lowered both ways (tools/mosaic_pallas_compare.py;
# MOSAIC_PALLAS_SET=all adds JAX's own ops/gpu kernels with their tests' tuning configurations, a few minutes).
MOSAIC_VENV := .venv-mosaic
MOSAIC_PALLAS_SET ?= own
.PHONY: test-mosaic
test-mosaic:
	@test -x $(MOSAIC_VENV)/bin/python || $(PYTHON) -m venv $(MOSAIC_VENV)
	$(MOSAIC_VENV)/bin/python -m pip install -q -e '.[test,mosaic]'
	$(MOSAIC_VENV)/bin/python -m pytest -p no:cacheprovider -n 2 tests/test_frontend_mosaic_gpu.py \
		tests/test_frontend_mosaic_gpu_layouts.py tests/test_infer_ssa.py
	$(MOSAIC_VENV)/bin/python tools/mosaic_pallas_compare.py --set $(MOSAIC_PALLAS_SET)
	@test -z "$(MOSAIC_TESTS)" || $(MOSAIC_VENV)/bin/python tools/mosaic_layout_tests.py --jax-src "$(MOSAIC_TESTS)" \
		--json mosaic_layout_tests.json

# The Gluon front end against Triton 3.9 in its own environment: layouts against gl.to_linear_layout, the
# recorded kernels (tests/data/gluon, written by tools/gluon_fixtures.py) resolved and compiled to cubin for
# sm_80 / sm_90 on the CPU, and the report against the authors' kernels (benchmarks/gluon_resolve.py);
# with TRITON_SRC set to a Triton checkout, Triton's own Gluon kernels against the record (tools/gluon_suite.py).
GLUON_VENV := .venv-gluon
.PHONY: test-gluon
test-gluon:
	@test -x $(GLUON_VENV)/bin/python || $(PYTHON) -m venv $(GLUON_VENV)
	$(GLUON_VENV)/bin/python -m pip install -q --upgrade pip
	$(GLUON_VENV)/bin/python -m pip install -q -e '.[test,gluon]'
	LAYOUTKIT_GLUON_COMPILE=1 $(GLUON_VENV)/bin/python -m pytest -p no:cacheprovider -n auto \
		tests/test_gluon_layouts.py tests/test_gluon_resolve.py tests/test_gluon_entry.py tests/test_gluon_suite.py
	$(GLUON_VENV)/bin/python benchmarks/gluon_resolve.py

# SASS of the emitted sm_80 GEMMs beside TileLang's (nvcc; cuobjdump from PATH or the nvidia-cuda-cuobjdump
# wheel, installed into the bench environment only; TileLang from the bench environment when it installed)
.PHONY: sass-report
sass-report:
	@test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	@$(BENCH_VENV)/bin/python -m pip install -q -e . || true
	@$(BENCH_VENV)/bin/python -m pip install -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm || echo "cuobjdump not installable"
	$(BENCH_VENV)/bin/python benchmarks/sass_report.py
	@$(BENCH_VENV)/bin/python -m pip install -q nvidia-cuda-nvdisasm || echo "nvdisasm not installable"
	$(BENCH_VENV)/bin/python benchmarks/sass_report_sm90.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) $(TILELANG_VENV) $(ORACLE_VENV) build dist *.egg-info out docs/api docs/tutorials
