package rietest

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

func TestListeningInodes(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0
   1: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1 0 100 0 0 10 0
   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0 100 0 0 10 0
   3: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0 100 0 0 10 0
   4: 0100007F:11F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0 100 0 0 10 0
`
	// 8080 is 1F90: the listeners on it at any address, not the
	// established connection (01), not port 8081, not a field whose
	// digits only end in 1F90.
	got := listeningInodes(table, 8080)
	if len(got) != 2 || !got["111"] || !got["444"] {
		t.Fatalf("listeningInodes = %v, want 111 and 444", got)
	}
	if got := listeningInodes(table, 8082); len(got) != 0 {
		t.Fatalf("port 8082: %v, want none", got)
	}
}

func TestListensOn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	if owned, known := listensOn(os.Getpid(), addr); !known || !owned {
		t.Fatalf("this process's listener: owned %v known %v, want both", owned, known)
	}
	// Another process does not hold it.
	other := exec.Command("sleep", "5")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	if owned, known := listensOn(other.Process.Pid, addr); !known || owned {
		t.Fatalf("another process: owned %v known %v, want not owned, known", owned, known)
	}
	// A port nobody listens on.
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	if owned, _ := listensOn(os.Getpid(), freeAddr); owned {
		t.Fatalf("a closed port: owned")
	}
	if _, known := listensOn(os.Getpid(), "no port"); known {
		t.Fatalf("an address without a port is known")
	}
}
