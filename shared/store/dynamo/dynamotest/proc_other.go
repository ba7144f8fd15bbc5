//go:build !linux

package dynamotest

import "os/exec"

func setParentDeathSignal(*exec.Cmd) {}
