package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/lifeline-k8s/lifeline/hack/binaries"
)

// Preflight checks, before anything is built or started, what a cluster of
// o needs from the machine, and says what is missing, one line each, with
// what to do: disk for the binaries' cache and the cluster's data, and for
// real nodes root, cgroups and a way to install the runtime. The ports are
// chosen free when each component starts, so none is checked here.
func Preflight(o Options) error {
	var errs []error
	cache, err := binaries.CacheDir()
	if err != nil {
		return err
	}
	need := uint64(1 << 30)
	if _, err := os.Stat(filepath.Join(cache, "bin")); err != nil {
		need = 4 << 30 // a first run builds the binaries (2 GiB) beside Go's caches
	}
	errs = append(errs, freeSpace(cache, need, "the binaries' cache ("+cache+"; LIFELINE_CACHE_DIR moves it)"))
	if o.Dir != "" {
		errs = append(errs, freeSpace(o.Dir, 1<<30, "the cluster's data ("+o.Dir+")"))
	}
	if o.RealNodes > 0 {
		if os.Geteuid() != 0 {
			errs = append(errs, errors.New("real nodes need root (network namespaces, cgroups, a kubelet): run as root, or without real nodes (make dev ARGS=-real-nodes=0)"))
		}
		if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
			errs = append(errs, errors.New("real nodes need cgroups mounted at /sys/fs/cgroup: mount them, or run without real nodes (make dev ARGS=-real-nodes=0)"))
		}
		if _, err := exec.LookPath("containerd"); err != nil {
			if _, err := exec.LookPath("apt-get"); err != nil {
				errs = append(errs, fmt.Errorf("real nodes need the packages %s, and neither they nor apt-get are here: install them, or run without real nodes (make dev ARGS=-real-nodes=0)", packageList()))
			}
		}
	}
	return errors.Join(errs...)
}

// freeSpace says when the file system of path (or of its nearest existing
// parent) has less than need bytes free for what.
func freeSpace(path string, need uint64, what string) error {
	for {
		if _, err := os.Stat(path); err == nil || path == filepath.Dir(path) {
			break
		}
		path = filepath.Dir(path)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return nil // not knowable here; the build says so if it runs out
	}
	if free := st.Bavail * uint64(st.Bsize); free < need {
		return fmt.Errorf("%s needs %.0f GiB free on %s, which has %.1f GiB: free some space", what, float64(need)/(1<<30), path, float64(free)/(1<<30))
	}
	return nil
}
