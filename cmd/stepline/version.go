package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildInfo is what the binary knows of how it was built: the module
// version and the VCS settings the go command stamped in.
type buildInfo struct {
	version   string // the main module's version: a tag, a pseudo-version, or "(devel)"
	revision  string // vcs.revision
	time      string // vcs.time, RFC 3339
	modified  bool   // vcs.modified: the work tree had uncommitted changes
	goVersion string
}

// readBuildInfo reads the binary's build information
// (runtime/debug.ReadBuildInfo); zero when there is none.
func readBuildInfo() buildInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return buildInfo{}
	}
	return buildInfoOf(info)
}

func buildInfoOf(info *debug.BuildInfo) buildInfo {
	b := buildInfo{version: info.Main.Version, goVersion: info.GoVersion}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.time":
			b.time = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// versionText is what --version and the version command print after
// "stepline ": "v1.2.0 (commit 0123456789ab, 2026-12-01T10:00:00Z,
// modified; go1.25.0)". Without a module version it says devel; without
// VCS information (a build with -buildvcs=false) it names no commit.
func versionText(b buildInfo) string {
	v := b.version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var facts []string
	if b.revision != "" {
		facts = append(facts, "commit "+b.revision)
	}
	if b.time != "" {
		facts = append(facts, b.time)
	}
	if b.modified {
		facts = append(facts, "modified")
	}
	var sb strings.Builder
	sb.WriteString(v)
	if len(facts) > 0 || b.goVersion != "" {
		sb.WriteString(" (")
		sb.WriteString(strings.Join(facts, ", "))
		if b.goVersion != "" {
			if len(facts) > 0 {
				sb.WriteString("; ")
			}
			sb.WriteString(b.goVersion)
		}
		sb.WriteString(")")
	}
	return sb.String()
}

// version is the module version this binary was built from, as GET
// /health reports it: a tagged version, else the VCS revision, else
// "devel".
func version() string {
	b := readBuildInfo()
	if b.version != "" && b.version != "(devel)" {
		return b.version
	}
	if len(b.revision) >= 12 {
		return "devel-" + b.revision[:12]
	}
	return "devel"
}

// cmdVersion prints what --version prints.
func cmdVersion(*cobra.Command) action {
	return func(_ context.Context, e env, _ []string) int {
		fmt.Fprintf(e.stdout, "stepline %s\n", versionText(readBuildInfo()))
		return exitOK
	}
}
