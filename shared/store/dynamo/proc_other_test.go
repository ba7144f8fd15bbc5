//go:build !linux

package dynamo_test

import "os/exec"

func setParentDeathSignal(*exec.Cmd) {}
