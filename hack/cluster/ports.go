package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePorts picks n distinct free loopback ports below the kernel's
// ephemeral range, at random. Components are started again on their
// ports (etcd and the API server after a restart, a registry after an
// outage), and while one is down any other process may take its port if
// it lies in that range: every bind to port 0 draws from it, and so do
// outgoing connections. Below the range a port is taken only by a bind
// that names it, such as another FreePorts pick, which a random start
// over 17,000 ports makes unlikely. (A chaos run in CI whose registry
// showed every sign of never coming back led to this; its log did not
// show the cause.)
func FreePorts(n int) ([]int, error) {
	lo, hi := fixedRange()
	if hi-lo < 1000 {
		return kernelPorts(n)
	}
	return portsFrom(lo, hi, lo+rand.IntN(hi-lo), n)
}

// portsFrom takes the first n ports of lo..hi-1 that can be listened on,
// from start round.
func portsFrom(lo, hi, start, n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := 0; i < hi-lo && len(ports) < n; i++ {
		port := lo + (start-lo+i)%(hi-lo)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		listeners = append(listeners, l)
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("only %d free ports in %d-%d, want %d", len(ports), lo, hi-1, n)
	}
	return ports, nil
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
