// Command lifeline-cni is the pod network of the local cluster's real
// nodes: it gives each pod an eth0 with a /32 address and no route, and the
// other end of eth0's veth pair stays inside the pod's own network
// namespace. A pod thus has an IP (the runtime and the kubelet want one)
// and can reach only itself: no packet of a test pod leaves its namespace,
// let alone the machine. Addresses come from the host-local IPAM plugin
// (Debian's containernetworking-plugins), whose records live in the
// cluster's folder.
//
// Every namespace it is handed is recorded (one file per container ID in
// recordDir) so that a tear-down can remove any the runtime left behind.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/containernetworking/plugins/pkg/ipam"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
)

// conf is the network configuration: CNI's own fields, the IPAM section
// (passed on to host-local as it is) and where namespaces are recorded.
type conf struct {
	types.NetConf
	RecordDir string `json:"recordDir"`
}

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: add, Del: del, Check: check}, version.All, "lifeline-cni: a pod network that keeps every packet in the pod")
}

func parse(data []byte) (*conf, error) {
	var c conf
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("parsing the network configuration: %w", err)
	}
	if c.IPAM.Type == "" {
		return nil, fmt.Errorf("ipam.type is required")
	}
	return &c, nil
}

func add(args *skel.CmdArgs) error {
	c, err := parse(args.StdinData)
	if err != nil {
		return err
	}
	if err := record(c, args); err != nil {
		return err
	}
	r, err := ipam.ExecAdd(c.IPAM.Type, args.StdinData)
	if err != nil {
		return err
	}
	ipamResult, err := current.NewResultFromResult(r)
	if err != nil {
		return err
	}
	if len(ipamResult.IPs) == 0 {
		return fmt.Errorf("IPAM %s gave no address", c.IPAM.Type)
	}
	netns, err := ns.GetNS(args.Netns)
	if err != nil {
		return fmt.Errorf("opening the pod's network namespace %s: %w", args.Netns, err)
	}
	defer netns.Close()
	iface := &current.Interface{Name: args.IfName, Sandbox: args.Netns}
	err = netns.Do(func(ns.NetNS) error { return plumb(args.IfName, ipamResult.IPs, iface) })
	if err != nil {
		_ = ipam.ExecDel(c.IPAM.Type, args.StdinData)
		return err
	}
	result := &current.Result{CNIVersion: current.ImplementedSpecVersion, Interfaces: []*current.Interface{iface}}
	for _, ip := range ipamResult.IPs {
		ip.Interface = current.Int(0)
		ip.Gateway = nil
		// A /32: the pod reaches its own address and nothing else.
		ip.Address = net.IPNet{IP: ip.Address.IP, Mask: net.CIDRMask(32, 32)}
		result.IPs = append(result.IPs, ip)
	}
	return types.PrintResult(result, c.CNIVersion)
}

// plumb runs inside the pod's namespace: a veth pair whose two ends both
// stay there, the pod's end up with its addresses and no route.
func plumb(ifName string, ips []*current.IPConfig, iface *current.Interface) error {
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifName}, PeerName: "lifeline-sink"}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("adding %s: %w", ifName, err)
	}
	link, err := netlink.LinkByName(ifName)
	if err != nil {
		return err
	}
	iface.Mac = link.Attrs().HardwareAddr.String()
	for _, ip := range ips {
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip.Address.IP, Mask: net.CIDRMask(32, 32)}}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("addressing %s: %w", ifName, err)
		}
	}
	for _, name := range []string{"lifeline-sink", ifName} {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("bringing %s up: %w", name, err)
		}
	}
	return nil
}

func del(args *skel.CmdArgs) error {
	c, err := parse(args.StdinData)
	if err != nil {
		return err
	}
	// The links go with the namespace; only the address is returned. The
	// namespace's record stays: the tear-down checks it is gone.
	return ipam.ExecDel(c.IPAM.Type, args.StdinData)
}

func check(args *skel.CmdArgs) error {
	netns, err := ns.GetNS(args.Netns)
	if err != nil {
		return err
	}
	defer netns.Close()
	return netns.Do(func(ns.NetNS) error {
		_, err := netlink.LinkByName(args.IfName)
		return err
	})
}

// record notes the namespace a sandbox was given, for the tear-down.
func record(c *conf, args *skel.CmdArgs) error {
	if c.RecordDir == "" || args.Netns == "" {
		return nil
	}
	if err := os.MkdirAll(c.RecordDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.RecordDir, args.ContainerID), []byte(args.Netns), 0o644)
}
