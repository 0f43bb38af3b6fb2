package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// FreePorts picks n distinct free loopback ports below the kernel's
// ephemeral range. Components are started again on their ports (etcd and
// the API server after a restart, a registry after an outage), and while
// one is down any other process may take its port if it lies in that
// range: every bind to port 0 draws from it, and so do outgoing
// connections. Below the range a port is taken only by a bind that names
// it, such as another test process's FreePorts. Each process therefore
// walks the range from a random start of its own and never goes back, so
// two processes pick the same port only once their walks meet (each
// uses a few hundred of 17,000). (A chaos run in CI whose registry showed
// every sign of never coming back led to this; its log did not show the
// cause.)
func FreePorts(n int) ([]int, error) {
	lo, hi := fixedRange()
	if hi-lo < 1000 {
		return kernelPorts(n)
	}
	walk.Lock()
	defer walk.Unlock()
	if walk.next == 0 {
		walk.next = lo + rand.IntN(hi-lo)
	}
	ports, next, err := portsFrom(lo, hi, walk.next, n)
	walk.next = next
	return ports, err
}

// walk is this process's place in the range.
var walk struct {
	sync.Mutex
	next int
}

// portsFrom takes the first n ports of lo..hi-1 that can be listened on,
// from start round, and says where to start next.
func portsFrom(lo, hi, start, n int) ([]int, int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	port := start
	for i := 0; i < hi-lo && len(ports) < n; i++ {
		port = lo + (start-lo+i)%(hi-lo)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		listeners = append(listeners, l)
		ports = append(ports, port)
	}
	next := lo + (port+1-lo)%(hi-lo)
	if len(ports) < n {
		return nil, next, fmt.Errorf("only %d free ports in %d-%d, want %d", len(ports), lo, hi-1, n)
	}
	return ports, next, nil
}

// fixedRange is the span FreePorts draws from: from 15000 (above the
// well-known services a developer's machine runs) up to the first
// ephemeral port.
func fixedRange() (lo, hi int) {
	lo, hi = 15000, 32768 // Linux's default ephemeral range starts at 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if first, err := strconv.Atoi(f[0]); err == nil {
				hi = first
			}
		}
	}
	return lo, hi
}

// kernelPorts asks the kernel for n ports, for a machine whose ephemeral
// range leaves no room below it.
func kernelPorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
