package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// A nodeNet is a real node's own network: a network namespace the
// cluster makes, joined to the machine's by a veth pair on a /30 of the
// benchmarking range 198.18.0.0/15 (RFC 2544, never routed), and nothing
// else: no default route, and the machine does not forward. The node's
// kubelet, containerd and host-network pods live in it, so two nodes
// (and two clusters) have addresses of their own, as machines do; the
// addresses are not loopback ones, which EndpointSlices refuse, so the API
// server can call a host-network webhook through its Service. Loopback
// ports of the machine a node needs (the API server's, a test registry's)
// are forwarded into the namespace's loopback (forward).
type nodeNet struct {
	name           string // of the namespace, under /run/netns
	hostIf         string
	hostIP, nodeIP net.IP

	mu        sync.Mutex
	listeners []net.Listener
}

// nodeNetLock serializes address choices of every cluster on the machine.
const nodeNetLock = "/run/lifeline-nodenet.lock"

// newNodeNet makes the namespace and the veth pair, the namespace's end
// named eth0 (the kubelet and its pods see an ordinary host).
func newNodeNet(id string, i int) (_ *nodeNet, err error) {
	unlock, err := binaries.LockFile(nodeNetLock, io.Discard, "")
	if err != nil {
		return nil, err
	}
	defer unlock()
	subnet, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	n := &nodeNet{name: fmt.Sprintf("lifeline-%s-%d", id, i), hostIf: fmt.Sprintf("ll%s%d", id[:6], i),
		hostIP: ipAdd(subnet, 1), nodeIP: ipAdd(subnet, 2)}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	ns, err := newNamedNetns(n.name)
	if err != nil {
		return nil, fmt.Errorf("making network namespace %s: %w", n.name, err)
	}
	defer ns.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: n.hostIf}, PeerName: fmt.Sprintf("lp%s%d", id[:6], i)}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("adding %s: %w", n.hostIf, err)
	}
	host, err := netlink.LinkByName(n.hostIf)
	if err != nil {
		return nil, err
	}
	peer, err := netlink.LinkByName(veth.PeerName)
	if err != nil {
		return nil, err
	}
	if err := netlink.LinkSetNsFd(peer, int(ns)); err != nil {
		return nil, err
	}
	if err := netlink.AddrAdd(host, &netlink.Addr{IPNet: &net.IPNet{IP: n.hostIP, Mask: net.CIDRMask(30, 32)}}); err != nil {
		return nil, err
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return nil, err
	}
	return n, inNetns(ns, func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return err
		}
		eth, err := netlink.LinkByName(veth.PeerName)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetName(eth, "eth0"); err != nil {
			return err
		}
		if err := netlink.AddrAdd(eth, &netlink.Addr{IPNet: &net.IPNet{IP: n.nodeIP, Mask: net.CIDRMask(30, 32)}}); err != nil {
			return err
		}
		return netlink.LinkSetUp(eth)
	})
}

// freeSubnet is the first /30 of 198.18.0.0/15 that no interface of the
// machine has an address in (other clusters' nodes hold theirs).
func freeSubnet() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	base := net.IPv4(198, 18, 0, 0).To4()
	for k := 0; k < 1<<15; k++ {
		subnet := ipAdd(base, 4*k)
		taken := false
		for _, a := range addrs {
			if ipnet, ok := a.(*net.IPNet); ok && (&net.IPNet{IP: subnet, Mask: net.CIDRMask(30, 32)}).Contains(ipnet.IP) {
				taken = true
			}
		}
		if !taken {
			return subnet, nil
		}
	}
	return nil, errors.New("no free /30 left in 198.18.0.0/15")
}

func ipAdd(ip net.IP, n int) net.IP {
	v := uint32(ip.To4()[0])<<24 | uint32(ip.To4()[1])<<16 | uint32(ip.To4()[2])<<8 | uint32(ip.To4()[3])
	v += uint32(n)
	return net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)).To4()
}

// newNamedNetns makes /run/netns/name without leaving this thread in it.
func newNamedNetns(name string) (netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return 0, err
	}
	defer orig.Close()
	ns, err := netns.NewNamed(name)
	if err != nil {
		return 0, err
	}
	if err := netns.Set(orig); err != nil {
		// This thread is in the wrong namespace: never unlock it.
		runtime.LockOSThread()
		return 0, err
	}
	return ns, nil
}

// inNetns runs f on a thread inside ns.
func inNetns(ns netns.NsHandle, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		return err
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		runtime.LockOSThread() // stranded: keep it away from other goroutines
		return err
	}
	return ferr
}

// path is the namespace's file, for nsenter --net.
func (n *nodeNet) path() string { return filepath.Join("/run/netns", n.name) }

// forward listens on 127.0.0.1:port inside the namespace and relays each
// connection to 127.0.0.1:port of the machine.
func (n *nodeNet) forward(port int) error {
	ns, err := netns.GetFromPath(n.path())
	if err != nil {
		return err
	}
	defer ns.Close()
	var l net.Listener
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if err := inNetns(ns, func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		return fmt.Errorf("forwarding %s into %s: %w", addr, n.name, err)
	}
	n.mu.Lock()
	n.listeners = append(n.listeners, l)
	n.mu.Unlock()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go relay(in, addr)
		}
	}()
	return nil
}

func relay(in net.Conn, addr string) {
	defer in.Close()
	out, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	<-done
}

// close stops the forwarding and removes the namespace (its eth0 goes with
// it, and so the veth pair).
func (n *nodeNet) close() error {
	n.mu.Lock()
	for _, l := range n.listeners {
		l.Close()
	}
	n.listeners = nil
	n.mu.Unlock()
	var errs []error
	if link, err := netlink.LinkByName(n.hostIf); err == nil {
		if err := netlink.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", n.hostIf, err))
		}
	}
	if err := syscall.Unmount(n.path(), syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
		errs = append(errs, fmt.Errorf("unmounting %s: %w", n.path(), err))
	}
	if err := os.Remove(n.path()); err != nil && !os.IsNotExist(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
