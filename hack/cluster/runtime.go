package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// The container runtime of the real nodes: Debian's containerd, runc and
// CNI plugins, installed by EnsureRuntime as packages. Debian's packages
// install in seconds; containerd v2 built from its Go module works too
// but takes about 7 minutes to build on this kind of machine, more than
// make test can spend. containerd 1.6 answers the kubelet's CRI v1; the
// one call it lacks (RuntimeConfig) the kubelet falls back from until
// 1.37 (docs/local-cluster.md). crun is not an option here: it refuses the
// hybrid cgroup layout of these machines.
//
// runtimePackages are pinned to the Debian release's versions; the
// upstream version (before "~" or "+") must match what is installed, and
// a Debian security rebuild of the same upstream version is accepted.
var runtimePackages = []struct{ name, version string }{
	{"containerd", "1.6.20~ds1-1+deb12u3"},
	{"runc", "1.1.5+ds1-1+deb12u1"},
	{"containernetworking-plugins", "1.1.1+ds1-3+b5"},
}

// runtimeVersions are the upstream versions, for progress lines.
var runtimeVersions = map[string]string{"containerd": "1.6.20", "runc": "1.1.5"}

// runtimePaths are where the packages put the programs the cluster runs.
var runtimePaths = map[string]string{
	"containerd": "/usr/bin/containerd",
	"ctr":        "/usr/bin/ctr",
	"shim":       "/usr/bin/containerd-shim-runc-v2",
	"runc":       "/usr/sbin/runc",
}

// cniPluginDir holds Debian's CNI plugins (loopback and host-local).
const cniPluginDir = "/usr/lib/cni"

// EnsureRuntime installs the runtime packages when a program they provide
// is missing or of another upstream version. It needs root (apt-get), as
// the kubelet does; concurrent callers wait for one install.
func EnsureRuntime(ctx context.Context, progress io.Writer) error {
	if runtimeInstalled(ctx) == nil {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("real nodes need root (a kubelet and containerd) and the packages %s", packageList())
	}
	cache, err := binaries.CacheDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	unlock, err := binaries.LockFile(filepath.Join(cache, ".apt.lock"), progress, "the container runtime's packages")
	if err != nil {
		return err
	}
	defer unlock()
	if runtimeInstalled(ctx) == nil {
		return nil
	}
	fmt.Fprintf(progress, "installing %s with apt-get (first time only)\n", packageList())
	if out, err := apt(ctx, "update", "-qq"); err != nil {
		return fmt.Errorf("apt-get update: %w\n%s", err, out)
	}
	var pinned []string
	for _, p := range runtimePackages {
		pinned = append(pinned, p.name+"="+p.version)
	}
	if out, err := apt(ctx, append([]string{"install", "-y", "-qq", "--no-install-recommends"}, pinned...)...); err != nil {
		// Debian keeps one version a suite: a security rebuild replaces
		// the pinned one. The same upstream version is as good.
		fmt.Fprintf(progress, "the pinned versions are gone from the archive (%v); installing the current ones\n", strings.TrimSpace(lastLine(out)))
		var names []string
		for _, p := range runtimePackages {
			names = append(names, p.name)
		}
		if out, err := apt(ctx, append([]string{"install", "-y", "-qq", "--no-install-recommends"}, names...)...); err != nil {
			return fmt.Errorf("apt-get install: %w\n%s", err, out)
		}
	}
	return runtimeInstalled(ctx)
}

func apt(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	return cmd.CombinedOutput()
}

// runtimeInstalled says what is missing: a program, or a package of
// another upstream version.
func runtimeInstalled(ctx context.Context) error {
	for _, p := range runtimePaths {
		if _, err := os.Stat(p); err != nil {
			return err
		}
	}
	for _, plugin := range []string{"loopback", "host-local"} {
		if _, err := os.Stat(filepath.Join(cniPluginDir, plugin)); err != nil {
			return err
		}
	}
	for _, p := range runtimePackages {
		out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", p.name).Output()
		if err != nil {
			return fmt.Errorf("package %s: %w", p.name, err)
		}
		if upstream(string(out)) != upstream(p.version) {
			return fmt.Errorf("package %s is %s, want %s", p.name, out, p.version)
		}
	}
	return nil
}

// upstream is a Debian version's upstream part: 1.6.20~ds1-1+deb12u3 is 1.6.20.
func upstream(v string) string {
	if i := strings.IndexAny(v, "~+-"); i >= 0 {
		return v[:i]
	}
	return v
}

func packageList() string {
	var names []string
	for _, p := range runtimePackages {
		names = append(names, p.name+" "+upstream(p.version))
	}
	return strings.Join(names, ", ")
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
