# Stepline build, test and run targets. Every tool the tests need is
# installed by these targets: `make test` on a fresh clone is enough.

GO        ?= go
BIN       := bin
NODE_BIN  := node_modules/.bin
STATICCHECK_VERSION := v0.8.2

export CDK_DISABLE_CLI_TELEMETRY := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: all build cli lambdas test tools chromium node-tools dynamodb-local rie python-tools lint lint-template run run-agent synth diff deploy destroy test-scale e2e mutate clean

all: build

FUNCTIONS := $(patsubst functions/%/main.go,%,$(wildcard functions/*/main.go))
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags="-s -w"
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d

## build: the CLI (bin/stepline) and the Lambda bootstraps: arm64 for
## deployment (bin/lambda/<fn>/bootstrap), amd64 for the emulator tests
## (bin/lambda-amd64/<fn>/bootstrap)
build: cli lambdas

cli:
	$(GO) build -o $(BIN)/stepline ./cmd/stepline

lambdas:
	@for fn in $(FUNCTIONS); do \
		echo "bootstrap $$fn"; \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/lambda/$$fn/bootstrap ./functions/$$fn || exit 1; \
		GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/lambda-amd64/$$fn/bootstrap ./functions/$$fn || exit 1; \
	done

## synth: the CloudFormation templates (cdk.out/), offline, no AWS
## credentials needed; the app checks each against CloudFormation's limits
## with 20% headroom. diff, deploy and destroy: cdk diff / deploy / destroy
## of that synthesized assembly, with your credentials.
## CDK_ARGS passes arguments to cdk (context with -c, options); STACKS
## chooses the stacks (default --all: the core and every pipeline stack).
##   make deploy CDK_ARGS="-c stage=prod -c stepline:alarmEmail=ops@example.com"
##   make diff CDK_ARGS="-c stage=dev" STACKS=Stepline-dev-Pipelines-03
## Give diff, deploy and destroy the CDK_ARGS you synthesized with: they
## act on the stacks of cdk.out.
CDK_ARGS ?=
STACKS   ?= --all

synth: lambdas node-tools
	$(GO) build -o $(BIN)/cdk-app ./infra/app
	$(NODE_BIN)/cdk synth --app $(BIN)/cdk-app --quiet --no-notices $(CDK_ARGS)

diff: synth
	$(NODE_BIN)/cdk diff --app cdk.out --no-notices $(CDK_ARGS) $(STACKS)

deploy: synth
	$(NODE_BIN)/cdk deploy --app cdk.out --no-notices $(CDK_ARGS) $(STACKS)

destroy: synth
	$(NODE_BIN)/cdk destroy --app cdk.out --no-notices $(CDK_ARGS) $(STACKS)

## test-scale: the scale tests with their figures: 10, 100 and 200
## generated pipelines synthesized over pipeline stacks, every stack within
## the limits, cdk-nag and cfn-lint clean, adding a pipeline changes its
## own stack only (make test runs the 200 alone)
test-scale: python-tools
	STEPLINE_SCALE=1 STEPLINE_PYTHON=$(PYTHON) $(GO) test -count=1 -timeout 30m -run 'TestScale' -v ./infra/

## tools: everything the tests need (node tools pinned in package-lock.json,
## DynamoDB Local for the DynamoDB store's tests, moto and cfn-lint for the
## offline AWS tier, Chromium for the web UI's browser test)
tools: node-tools dynamodb-local rie python-tools chromium

## chromium: a headless browser for shared/webui's browser test (Debian's
## chromium package). One found on PATH, or named by STEPLINE_CHROMIUM, is
## used as it is; otherwise apt-get installs it (with sudo when not root),
## and where it cannot the target fails saying so.
chromium:
	@if [ -n "$$STEPLINE_CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; then exit 0; fi; \
	SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	{ $$SUDO apt-get install -y chromium || { $$SUDO apt-get update && $$SUDO apt-get install -y chromium; }; } >/dev/null && command -v chromium >/dev/null || \
		{ echo "make: no Chromium, and apt-get could not install Debian's chromium package; the web UI's browser test needs it (or set STEPLINE_CHROMIUM)" >&2; exit 1; }

## python-tools: moto[server] (the offline AWS box of make e2e), pinned
## exactly, and cfn-lint (make lint-template). A $(PYTHON) that has them is
## used as it is; otherwise pip installs them, and where it cannot (no
## PyPI) the target fails saying what is missing.
PYTHON        ?= python3
MOTO_VERSION  := 5.2.1
CFN_LINT_VERSION := 1.51.0

python-tools:
	@$(PYTHON) -c 'import sys, moto, flask, boto3; sys.exit(moto.__version__ != "$(MOTO_VERSION)")' 2>/dev/null || \
		$(PYTHON) -m pip install --quiet 'moto[server]==$(MOTO_VERSION)' || \
		{ echo "make: $(PYTHON) has no moto[server]==$(MOTO_VERSION) and pip could not install it; make e2e needs it (set PYTHON to a Python that has it)" >&2; exit 1; }
	@$(PYTHON) -c 'import cfnlint' 2>/dev/null || \
		$(PYTHON) -m pip install --quiet 'cfn-lint==$(CFN_LINT_VERSION)' || \
		{ echo "make: $(PYTHON) has no cfn-lint and pip could not install cfn-lint==$(CFN_LINT_VERSION); make lint-template needs it" >&2; exit 1; }

## rie: the AWS Lambda Runtime Interface Emulator (bin/aws-lambda-rie)
rie: $(BIN)/aws-lambda-rie

$(BIN)/aws-lambda-rie:
	GOBIN=$(CURDIR)/$(BIN) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

dynamodb-local:
	scripts/dynamodb-local.sh install

node-tools: node_modules/.package-lock.json

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

## test: install what the tests need, then vet and run every test
test: tools
	$(GO) vet ./...
	$(GO) test -count=1 ./...

## mutate: mutation testing (gremlins, pinned) of the decision packages,
## each against its own tests, one package at a time: two workers, each
## test run on one CPU, timeouts ten times the measured test time (on a
## 2-core machine the defaults time most mutants out). Prints per package
## the mutants killed, lived, not covered and timed out, with efficacy
## and mutant coverage. -count=1: the coverage run that sets the timeouts
## must not be a cached test result. Not part of make test (it takes minutes per
## package). MUTATE_PKGS narrows it, e.g. make mutate MUTATE_PKGS=./compiler/when
GREMLINS_VERSION := v0.6.0
MUTATE_PKGS ?= ./compiler/when ./shared/steprun ./shared/llmoutput ./shared/engine ./compiler ./shared/store/sqlite ./shared/store/dynamo
# compiler's run leaves out when/ (its own package above) and gate/; the
# DynamoDB store's, its test support (dynamotest/).
MUTATE_ARGS ?= --workers 2 --test-cpu 1 --timeout-coefficient 10 -E when/ -E gate/ -E dynamotest/

mutate:
	@for p in $(MUTATE_PKGS); do \
		echo "== $$p"; \
		STEPLINE_DYNAMODB_LOCAL=$${STEPLINE_DYNAMODB_LOCAL:-$(CURDIR)/.cache/dynamodb-local} GOFLAGS="$$GOFLAGS -count=1" $(GO) run github.com/go-gremlins/gremlins/cmd/gremlins@$(GREMLINS_VERSION) unleash $(MUTATE_ARGS) -S ltc $$p || exit 1; \
	done

## lint: formatting, vet and staticcheck
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

## lint-template: cfn-lint on the synthesized template: no errors and no
## warnings (each exemption is made in infra/ with its reason)
lint-template: synth python-tools
	$(PYTHON) -c 'import sys; from cfnlint.runner import main; sys.argv[0] = "cfn-lint"; sys.exit(main())' cdk.out/*.template.json

## e2e: the offline AWS tier (e2e/): the smoke tests of the box's patches
## to moto, then the Go tests with STEPLINE_E2E=1, which start the box
## (moto with the patches, JSONata in Node, the bootstraps under the
## Runtime Interface Emulator), run the tier and stop everything they
## started. Logs stay in e2e/logs.
E2E_ARGS ?=

e2e: build synth rie python-tools
	$(PYTHON) e2e/box/test_patches.py
	STEPLINE_E2E=1 STEPLINE_PYTHON=$(PYTHON) $(GO) test -count=1 -timeout 10m -parallel 4 $(E2E_ARGS) ./e2e/

## run: the main job: run the SRE triage example offline, scripted replies
## standing in for the models and the approver, on the embedded SQLite store
run: cli
	$(BIN)/stepline run \
		--event events/checkout-latency.trigger.json \
		--responses pipelines/responses/sre-alert-triage.yaml \
		pipelines/sre-alert-triage.yaml

## run-agent: run the SRE investigation example offline: an agent whose
## tool loop calls two MCP servers' tools (grafana, runbooks), with the
## model's turns, the tools' answers and the approver scripted
run-agent: cli
	$(BIN)/stepline run \
		--event events/incident-declared.trigger.json \
		--responses pipelines/responses/sre-investigation.yaml \
		pipelines/sre-investigation.yaml

clean:
	rm -rf $(BIN) cdk.out
