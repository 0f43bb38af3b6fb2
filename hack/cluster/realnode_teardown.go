package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The paths a kubelet or containerd writes whatever their configuration
// (docs/local-cluster.md): what the tear-down sweeps beside the nodes' own
// folders.
const (
	containerLogLinks = "/var/log/containers"
	devicePluginDir   = "/var/lib/kubelet/device-plugins"
	containerdRunDir  = "/run/containerd"
	netnsDir          = "/run/netns"
)

// makeCgroupRoot creates a kubelet's cgroup root in every hierarchy: the
// kubelet refuses a root that is missing from any.
func makeCgroupRoot(root string) error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		if err := os.MkdirAll(filepath.Join(h, root), 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", filepath.Join(h, root), err)
		}
	}
	return nil
}

// cgroupHierarchies are the mounted cgroup hierarchies (v1 and v2).
func cgroupHierarchies() ([]string, error) {
	mounts, err := readMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		if m.fsType == "cgroup" || m.fsType == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out, nil
}

type mount struct{ point, fsType, source string }

// readMounts parses /proc/self/mountinfo.
func readMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		out = append(out, mount{point: unescapeMount(fields[4]), fsType: fields[sep+1], source: unescapeMount(fields[sep+2])})
	}
	return out, s.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// stopRealNodes ends the real nodes and removes what they made outside
// the cluster's folder: the kubelets first (nothing restarts a container
// then), every pod sandbox through the CRI as the kubelet would remove
// it (its network namespace, mounts and shim go with it), containerd,
// then a sweep for anything a crash left behind. It reports what it could
// not remove.
func (c *Cluster) stopRealNodes() []error {
	var errs []error
	for _, n := range c.realNodes {
		_ = c.stopWithin("kubelet-"+n.name, syscall.SIGTERM, 10*time.Second)
	}
	for _, n := range c.realNodes {
		if err := removeSandboxes(n); err != nil {
			errs = append(errs, fmt.Errorf("%s: removing pod sandboxes: %w", n.name, err))
		}
		_ = c.stopWithin("containerd-"+n.name, syscall.SIGTERM, 10*time.Second)
		errs = append(errs, sweepNode(n)...)
		if n.net != nil {
			if err := n.net.close(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", n.name, err))
			}
		}
		if err := os.Remove(n.shortDir()); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
		if err := os.RemoveAll(n.socketDir()); err != nil {
			errs = append(errs, err)
		}
		removeEmpty(filepath.Dir(n.socketDir()))
	}
	errs = append(errs, sweepShared(c.Dir)...)
	c.realNodes = nil
	return errs
}

// removeSandboxes stops and removes every pod sandbox of a node's
// containerd, as `crictl rmp -fa` does.
func removeSandboxes(n *realNode) error {
	if _, err := os.Stat(n.socket()); err != nil {
		return nil // containerd never started
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+n.socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	for _, sb := range list.Items {
		if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return fmt.Errorf("stopping sandbox %s: %w", sb.Id, err)
		}
		if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			return fmt.Errorf("removing sandbox %s: %w", sb.Id, err)
		}
	}
	return nil
}

// sweepNode kills what is left of a node's processes, unmounts what is
// mounted under its folder or as one of its pods' network namespaces,
// and removes its cgroups.
func sweepNode(n *realNode) []error {
	var errs []error
	for _, pid := range nodeProcesses(n) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := waitGone(n, 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	netns := recordedNetns(n)
	mounts, err := readMounts()
	if err != nil {
		return append(errs, err)
	}
	var points []string
	for _, m := range mounts {
		if within(m.point, n.dir) || netns[m.point] {
			points = append(points, m.point)
		}
	}
	// Deepest first; a point mounted twice is unmounted twice.
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	for p := range netns {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("removing network namespace %s: %w", p, err))
		}
	}
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return append(errs, err)
	}
	for _, h := range hierarchies {
		if err := removeCgroupTree(filepath.Join(h, n.cgroupRoot)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// nodeProcesses are the processes of a node's pods (in its cgroups) and
// its containerd's shims (which name its socket).
func nodeProcesses(n *realNode) []int {
	seen := map[int]bool{}
	if hierarchies, err := cgroupHierarchies(); err == nil {
		for _, h := range hierarchies {
			_ = filepath.Walk(filepath.Join(h, n.cgroupRoot), func(path string, info os.FileInfo, err error) error {
				if err != nil || !info.IsDir() {
					return nil
				}
				data, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						seen[pid] = true
					}
				}
				return nil
			})
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), n.dir) {
			seen[pid] = true
		}
	}
	delete(seen, os.Getpid())
	var pids []int
	for pid := range seen {
		pids = append(pids, pid)
	}
	return pids
}

func waitGone(n *realNode, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := nodeProcesses(n)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: processes %v still running", n.name, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// recordedNetns are the network namespaces lifeline-cni was handed.
func recordedNetns(n *realNode) map[string]bool {
	out := map[string]bool{}
	dir := filepath.Join(n.dir, "cni/netns")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && len(data) > 0 {
			out[strings.TrimSpace(string(data))] = true
		}
	}
	return out
}

// removeCgroupTree removes a cgroup and its children, deepest first (a
// cgroup folder is removed with rmdir, and only once it has no children).
func removeCgroupTree(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && err != syscall.ENOENT {
			return fmt.Errorf("removing cgroup %s: %w", dirs[i], err)
		}
	}
	return nil
}

// sweepShared removes what the nodes leave in folders shared by every
// kubelet and containerd on the machine: links to their pods' logs, and
// folders they made that are empty now. Another cluster's entries stay.
func sweepShared(clusterDir string) []error {
	var errs []error
	entries, _ := os.ReadDir(containerLogLinks)
	for _, e := range entries {
		link := filepath.Join(containerLogLinks, e.Name())
		if target, err := os.Readlink(link); err == nil && within(target, clusterDir) {
			if err := os.Remove(link); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if !kubeletRunning() {
		_ = os.RemoveAll(devicePluginDir)
		removeEmpty("/var/lib/kubelet")
	}
	removeEmpty(containerLogLinks)
	for _, sub := range []string{"s", "fifo", "runc", "io.containerd.runtime.v2.task", ""} {
		removeEmpty(filepath.Join(containerdRunDir, sub))
	}
	removeEmpty(netnsDir)
	removeEmpty(shortLinks)
	return errs
}

// removeEmpty removes a folder if it is empty (and not otherwise).
func removeEmpty(dir string) { _ = syscall.Rmdir(dir) }

func kubeletRunning() bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(comm)) == "kubelet" {
			return true
		}
	}
	return false
}

// within says whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
