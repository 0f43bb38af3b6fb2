package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// shortDir is a short path to the node's folder: a unix socket's path may
// not be longer than 104 bytes, and a test's folder can be long
// (/tmp/TestMakeDevComesUpAndTearsDownWhole2644859192/001/dev/cluster/…).
// The kubelet's sockets are under its root folder, so that goes through
// it too.
func (n *realNode) shortDir() string {
	return filepath.Join(shortLinks, filepath.Base(strings.TrimPrefix(n.cgroupRoot, "/lifeline-")))
}

// shortLinks holds the nodes' short links; the tear-down removes them.
const shortLinks = "/run/lifeline"

// socket is the node's containerd socket, in a folder named after the
// node under the cluster's CRISocketDir: the chart's node agent mounts
// that folder and finds its node's socket by its node's name.
func (n *realNode) socket() string { return filepath.Join(n.socketDir(), "containerd.sock") }

func (n *realNode) socketDir() string {
	id := strings.TrimPrefix(n.cgroupRoot, "/lifeline-")
	return filepath.Join(shortLinks, id[:strings.LastIndex(id, "-")], n.name)
}

// CRISocketDir is the folder of the real nodes' containerd sockets, one
// folder per node name holding containerd.sock (the chart's
// nodeAgent.criSocketDir, with nodeAgent.criSocket
// "$(NODE_NAME)/containerd.sock").
func (c *Cluster) CRISocketDir() string {
	if len(c.realNodes) == 0 {
		return ""
	}
	return filepath.Dir(c.realNodes[0].socketDir())
}

// startInNode runs a node's component inside its network namespace.
func (c *Cluster) startInNode(n *realNode, name, path string, args ...string) error {
	return c.StartProcess(name, "/usr/bin/nsenter", append([]string{"--net=" + n.net.path(), "--", path}, args...)...)
}

func (c *Cluster) startContainerd(ctx context.Context, n *realNode, shared string) error {
	for _, sub := range []string{"root", "state", "runc", "opt", "cni/net.d", "cni/bin", "cni/ipam", "cni/netns", "kubelet"} {
		if err := os.MkdirAll(filepath.Join(n.dir, sub), 0o755); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(n.socketDir(), 0o755); err != nil {
		return err
	}
	_ = os.Remove(n.shortDir()) // a crashed run's
	if err := os.Symlink(n.dir, n.shortDir()); err != nil {
		return err
	}
	// containerd calls plugins by type from one folder: ours, and Debian's
	// loopback (for lo) and host-local (the addresses).
	links := map[string]string{
		"lifeline-cni": filepath.Join(shared, "bin", "lifeline-cni"),
		"loopback":     filepath.Join(cniPluginDir, "loopback"),
		"host-local":   filepath.Join(cniPluginDir, "host-local"),
	}
	for name, target := range links {
		link := filepath.Join(n.dir, "cni/bin", name)
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(n.dir, "cni/net.d/10-lifeline.conflist"), []byte(cniConfig(n)), 0o644); err != nil {
		return err
	}
	config := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(config, []byte(containerdConfig(n)), 0o644); err != nil {
		return err
	}
	if err := c.startInNode(n, "containerd-"+n.name, runtimePaths["containerd"], "--config="+config); err != nil {
		return err
	}
	return c.poll(ctx, "containerd of "+n.name, time.Minute, func(ctx context.Context) (bool, error) {
		return exec.CommandContext(ctx, runtimePaths["ctr"], "--address="+n.socket(), "version").Run() == nil, nil
	})
}

// podNetwork is where the real nodes' pods get their addresses: TEST-NET-2,
// never routed. (This kind of machine sits on TEST-NET-1 itself;
// checkPodNetwork refuses a range the machine uses.)
const podNetwork = "198.51.100.0/24"

// nodeSubnet gives each real node's pods a quarter of podNetwork.
func nodeSubnet(n *realNode) string {
	var i int
	fmt.Sscanf(n.name, "real-node-%d", &i)
	return fmt.Sprintf("198.51.100.%d/26", (i%4)*64)
}

// checkPodNetwork refuses to start real nodes on a machine with an
// address in podNetwork: a pod would share an address with the host.
func checkPodNetwork() error {
	_, network, err := net.ParseCIDR(podNetwork)
	if err != nil {
		return err
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && (network.Contains(ipnet.IP) || ipnet.Contains(network.IP)) {
			return fmt.Errorf("this machine has the address %s, inside the real nodes' pod network %s", ipnet, podNetwork)
		}
	}
	return nil
}

func cniConfig(n *realNode) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "lifeline",
  "plugins": [{
    "type": "lifeline-cni",
    "recordDir": %q,
    "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]]}
  }]
}
`, filepath.Join(n.dir, "cni/netns"), filepath.Join(n.dir, "cni/ipam"), nodeSubnet(n))
}

// containerdConfig keeps containerd's files under the node's folder where
// it allows (root, state, sockets, runc's state, /opt), with the settings
// this kind of machine needs (docs/local-cluster.md says why each).
func containerdConfig(n *realNode) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %[7]q
        Root = %[8]q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[9]q
    conf_dir = %[10]q
    max_conf_num = 1
`, filepath.Join(n.dir, "root"), filepath.Join(n.dir, "state"), n.socket(), n.socket()+".ttrpc",
		filepath.Join(n.dir, "opt"), PauseImage, runtimePaths["runc"], filepath.Join(n.dir, "runc"),
		filepath.Join(n.dir, "cni/bin"), filepath.Join(n.dir, "cni/net.d"))
}

// ImportImages loads image tarballs (such as make images writes) into
// every real node's runtime, as a user would with ctr or kind load: pods
// then run them with imagePullPolicy Never or IfNotPresent.
func (c *Cluster) ImportImages(ctx context.Context, tarballs ...string) error {
	for _, n := range c.realNodes {
		for _, t := range tarballs {
			if err := c.importImages(ctx, n, t); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Cluster) importImages(ctx context.Context, n *realNode, tarball string) error {
	out, err := exec.CommandContext(ctx, runtimePaths["ctr"], "--address="+n.socket(), "--namespace=k8s.io",
		"images", "import", "--no-unpack=false", tarball).CombinedOutput()
	if err != nil {
		return fmt.Errorf("importing the test images into %s: %w\n%s", n.name, err, out)
	}
	return nil
}
