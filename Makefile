# tidelake developer entry points. Two commands matter:
#   make demo   - set everything up and run the demo pipelines (PySpark, Python, CDC) on local storage
#   make test   - set everything up and run every check and test (paths, ruff, mypy, cargo test, pytest)
# and make docs builds the docs site (mkdocs.yml, docs/) into site/.
# Everything is installed by these targets into .venv; the cargo target dir lives outside the
# clone (CARGO_TARGET_DIR, default ~/.cache/tidelake/target) so rebuilds are incremental.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export CARGO_TARGET_DIR ?= $(HOME)/.cache/tidelake/target
# Build profile for the extension used by tests and the demo.
MATURIN_PROFILE ?= release

.PHONY: test demo venv self-contained develop spark35-test release-wheel rust-lint rust-test py-lint py-test java-oracle kafka hive iceberg-rest postgres chromium fault-proxies bench docs clean

$(VENV)/.deps: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.deps

# The development build carries the test-only fault injection (feature `fault-injection`) the
# tests switch on through storage options; release wheels (`release-wheel`, the release workflow)
# do not, and refuse those options.
develop: venv
	$(VENV)/bin/maturin develop --quiet --profile $(MATURIN_PROFILE) --features fault-injection

# A wheel built as releases are (no features): prints its path. tests/test_release_wheel.py builds
# it with RELEASE_WHEEL_PROFILE=dev: the features, not the optimizer, decide what it checks, and a
# debug build reuses the dependencies `rust-test` compiled (a release one recompiles with LTO).
RELEASE_WHEEL_DIR := $(CARGO_TARGET_DIR)/release-wheel
RELEASE_WHEEL_PROFILE ?= release
release-wheel: venv
	rm -rf $(RELEASE_WHEEL_DIR)
	$(VENV)/bin/maturin build --quiet --profile $(RELEASE_WHEEL_PROFILE) --out $(RELEASE_WHEEL_DIR) >&2
	@ls $(RELEASE_WHEEL_DIR)/*.whl

# Formatting and lints: rustfmt's defaults, every clippy warning an error.
rust-lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	cargo clippy -p tidelake-python --quiet -- -D warnings  # the release wheel's features (none)

rust-test:
	cargo test --workspace --quiet
	cargo test --manifest-path vendor/orc-rust/Cargo.toml --lib --quiet  # the patched orc-rust (vendor/orc-rust/PATCHES.md)

# The Java Paimon oracle of tests/test_interop_java.py: a thin jar and the classpath of its
# Maven dependencies (kept in ~/.m2), rebuilt only when its sources change.
JAVA_ORACLE := interop/java-oracle/target/java-oracle.jar
$(JAVA_ORACLE): interop/java-oracle/pom.xml $(shell find interop/java-oracle/src -name '*.java')
	mvn -q -B -f interop/java-oracle/pom.xml package
	touch $@

java-oracle: $(JAVA_ORACLE)

# The Kafka broker of the tests and the CDC demo (Apache Kafka from Maven Central, KRaft mode):
# nothing to compile, only the classpath of kafka_2.13 and its dependencies (kept in ~/.m2).
KAFKA_CLASSPATH := interop/kafka/target/classpath.txt
$(KAFKA_CLASSPATH): interop/kafka/pom.xml
	mvn -q -B -f interop/kafka/pom.xml package
	touch $@

kafka: $(KAFKA_CLASSPATH)

# The Hive Metastore of the Hive catalog tests (tests/_hive.py: Hive's standalone metastore 3.1.3
# on Derby) and the Hive client jars of the Java oracle's Hive jobs (Paimon's HiveCatalog): one
# classpath, and the metastore's Derby schema scripts; nothing to compile (jars kept in ~/.m2).
HIVE_CLASSPATH := interop/hive/target/classpath.txt
$(HIVE_CLASSPATH): interop/hive/pom.xml
	mvn -q -B -f interop/hive/pom.xml package
	touch $@

hive: $(HIVE_CLASSPATH)

# The Iceberg REST catalog of the `rest-catalog` Iceberg metadata tests (tests/_iceberg_rest.py:
# Apache Iceberg's own RESTCatalogServer from Maven Central): nothing to compile, only the
# classpath (jars kept in ~/.m2).
ICEBERG_REST_CLASSPATH := interop/iceberg-rest/target/classpath.txt
$(ICEBERG_REST_CLASSPATH): interop/iceberg-rest/pom.xml
	mvn -q -B -f interop/iceberg-rest/pom.xml package
	touch $@

iceberg-rest: $(ICEBERG_REST_CLASSPATH)

# PostgreSQL for the JDBC catalog tests (tests/_postgres.py starts its own cluster with Debian's
# initdb and pg_ctl): installed from Debian's packages when missing.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null)

# Chromium for the browser test of `tidelake ui` (tests/test_ui.py drives it headless: the rendered
# DOM and screenshots): installed from Debian's packages when missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# The fault-injecting proxies of tests/test_s3_faults.py, which tests/_faults.py starts between
# tidelake and the moto S3 server: Shopify's toxiproxy (TCP faults: latency, stalls, resets,
# truncation), built from the Go module proxy into a cache directory, and Debian's nginx (HTTP
# error responses), installed when missing.
TOXIPROXY_VERSION := 2.12.0
export TIDELAKE_TOXIPROXY ?= $(HOME)/.cache/tidelake/toxiproxy-$(TOXIPROXY_VERSION)/server
fault-proxies:
	@test -x $(TIDELAKE_TOXIPROXY) || \
		GOBIN=$(dir $(TIDELAKE_TOXIPROXY)) go install github.com/Shopify/toxiproxy/v2/cmd/server@v$(TOXIPROXY_VERSION)
	@test -x /usr/sbin/nginx || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null)

# ruff and mypy on python/ (configured in pyproject.toml); mypy reads the binding's stub file.
py-lint: venv
	$(VENV)/bin/ruff check python
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict --follow-imports=silent examples  # the typed API as users meet it

# Two pytest-xdist workers (a test file stays on one worker, so its module fixtures start once),
# then the tests marked `exclusive` (time-boxed runs with minimum counts, measurements, a
# standalone Spark cluster) alone; both always run, and either failing fails the target.
py-test: develop java-oracle kafka hive iceberg-rest postgres chromium fault-proxies
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=40 -m "not exclusive" tests; shared=$$?; \
	$(PY) -m pytest -q --durations=20 -m exclusive tests; exclusive=$$?; \
	test $$shared -eq 0 && test $$exclusive -eq 0

# The PySpark 3.5 lane: the Spark paths that need no Python Data Source (mapInArrow reads,
# writes, DML, tidelake.spark.sql), in a venv of their own with PySpark 3.5 and the extension
# built by `develop` on the path.
VENV35 := .venv-spark35
$(VENV35)/.deps: requirements-spark35.txt
	$(PYTHON) -m venv $(VENV35)
	$(VENV35)/bin/python -m pip install --quiet --upgrade pip
	$(VENV35)/bin/python -m pip install --quiet -r requirements-spark35.txt
	touch $@

spark35-test: develop $(VENV35)/.deps
	PYTHONPATH=$(CURDIR)/python $(VENV35)/bin/python -m pytest -q -p no:cacheprovider tests/test_spark_portable.py

# No tracked file may name a path outside the repository (tools/self_contained.py says why).
self-contained:
	$(PYTHON) tools/self_contained.py .

test: venv
	$(MAKE) self-contained
	$(MAKE) py-lint
	$(MAKE) rust-lint
	$(MAKE) rust-test
	$(MAKE) py-test
	$(MAKE) spark35-test

demo: develop kafka
	$(PY) examples/spark_demo.py
	$(PY) examples/demo.py
	$(PY) examples/cdc_demo.py

# The docs site into site/ (git-ignored); --strict: any warning (a broken link or anchor, a page
# missing from the nav) fails. tests/test_docs.py runs the same build and every page's code.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

bench: develop
	$(PY) -m pip install --quiet -r requirements-bench.txt
	$(PY) benches/run.py

clean:
	rm -rf $(VENV) $(VENV35) site python/tidelake/_internal*.so interop/java-oracle/target interop/kafka/target interop/hive/target interop/iceberg-rest/target
