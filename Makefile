# Stepline build, test and run targets. Every tool the tests need is
# installed by these targets: `make test` on a fresh clone is enough.

GO        ?= go
BIN       := bin
NODE_BIN  := node_modules/.bin
STATICCHECK_VERSION := 2025.1.1

export CDK_DISABLE_CLI_TELEMETRY := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: all build cli test tools node-tools dynamodb-local lint run clean

all: build

## build: the CLI (bin/stepline)
build: cli

cli:
	$(GO) build -o $(BIN)/stepline ./cmd/stepline

## tools: everything the tests need (node tools pinned in package-lock.json,
## DynamoDB Local for the DynamoDB store's tests)
tools: node-tools dynamodb-local

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

## lint: formatting, vet and staticcheck
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

## run: the main job: run the SRE triage example offline, scripted replies
## standing in for the models and the approver, on the embedded SQLite store
run: cli
	$(BIN)/stepline run \
		--event events/checkout-latency.trigger.json \
		--responses pipelines/responses/sre-alert-triage.yaml \
		pipelines/sre-alert-triage.yaml

clean:
	rm -rf $(BIN) cdk.out
