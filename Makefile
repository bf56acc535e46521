# beamgpu: the two commands of the README are `make run` and `make test`.
GO ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 30s
BENCHTIME ?= 2s

.PHONY: run run-fashion train test lint vet fmt-check staticcheck bench fuzz clean

## run: the Landsat pipeline on the embedded scene, on prism (outputs in out/landsat)
run:
	$(GO) run ./pipelines/landsat

## run-fashion: the Fashion-MNIST pipeline on the embedded test set with the shipped MLP
run-fashion:
	$(GO) run ./pipelines/fashion

## train: train the Fashion-MNIST MLP (needs the training set: apt-get install dataset-fashion-mnist)
train:
	$(GO) run ./pipelines/fashion/train --checkpoint_dir=out/fashion-ckpt --out=out/mlp-784-256-128-10.bgmlp

## test: every test, with the real Beam runner (prism); then the lint checks
test:
	$(GO) test ./...
	$(MAKE) lint

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...

## bench: the benchmarks, then one line per result with its ratio to the ceiling
bench:
	@mkdir -p out
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./transforms/... ./pipelines/... 2>/dev/null \
		| grep -E '^(Benchmark|ok|FAIL)' | tee out/bench.txt | awk ' \
		/^Benchmark/ { line = $$1; for (i = 2; i <= NF; i++) if ($$i ~ /^ratio/) line = line "  " $$i "=" $$(i-1); print line }'

## fuzz: a short run of every fuzz test (FUZZTIME each)
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) 2>&1 | grep -v 'level=INFO' | tail -2 || exit 1; \
		done; \
	done

clean:
	rm -rf out
