package cluster

import (
	"fmt"
	"net"
	"testing"
)

func TestFreePortsAreBelowTheEphemeralRangeAndFree(t *testing.T) {
	lo, hi := fixedRange()
	if hi-lo < 1000 {
		t.Skipf("this machine's ephemeral range starts at %d: FreePorts asks the kernel", hi)
	}
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p >= hi {
			t.Errorf("port %d outside %d-%d", p, lo, hi-1)
		}
		if seen[p] {
			t.Errorf("port %d given twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}

func TestFreePortsSkipsATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	got, next, err := portsFrom(taken, taken+50, taken, 3)
	if err != nil {
		t.Fatal(err)
	}
	if next != got[2]+1 {
		t.Errorf("next %d, want %d, past the last port given", next, got[2]+1)
	}
	for _, p := range got {
		if p == taken {
			t.Fatalf("got port %d, which is listened on", p)
		}
	}
	if got[0] <= taken || got[0] >= taken+50 {
		t.Errorf("got %v, want ports after %d", got, taken)
	}
}

// A process walks the range and does not come back to a port it gave,
// although the port is free again: its component may be down for a
// restart.
func TestFreePortsNeverGivesAPortTwice(t *testing.T) {
	lo, hi := fixedRange()
	if hi-lo < 1000 {
		t.Skipf("this machine's ephemeral range starts at %d: FreePorts asks the kernel", hi)
	}
	seen := map[int]bool{}
	for range 100 {
		ports, err := FreePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d given twice", p)
			}
			seen[p] = true
		}
	}
}
