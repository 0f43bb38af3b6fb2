// Package binaries builds the programs Lifeline's local clusters, tests
// and tools run (etcd, the Kubernetes control plane, kwok, the kubelet,
// Consul, Helm, OpenKruise's manager...) from the Go modules pinned in
// hack/tools, and caches each under its version in ~/.cache/lifeline. It
// needs nothing but the standard library and x/mod, so hack/buildbin
// compiles in seconds on a fresh machine and starts the control plane's
// build while the rest of the repository's dependencies still download.
package binaries

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/mod/modfile"
)

// A binary is one program the local cluster needs, built from a package of a
// tools module and cached under the version of the module it comes from.
type binary struct {
	name      string // file name of the built binary
	toolsDir  string // tools module, relative to the repository root
	module    string // module whose version keys the cache
	goPackage string // package to build
	// onDemand binaries are built by Binary when first asked for, not by
	// Binaries for every cluster: only the migration tests run OpenKruise,
	// only the krew manifest test runs krew, only make dashboard Prometheus,
	// only a cluster with real nodes the kubelet, only the chart's
	// cert-manager test cert-manager, only the HTTP registry's tests Consul,
	// only the chart's tests Helm, only make test gotestsum.
	onDemand bool
}

var binaries = []binary{
	{"etcd", "hack/tools", "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/server/v3", false},
	{"kube-apiserver", "hack/tools", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver", false},
	{"kube-controller-manager", "hack/tools", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-controller-manager", false},
	{"kube-scheduler", "hack/tools", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler", false},
	{"kubectl", "hack/tools", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kubectl", false},
	{"kubelet", "hack/tools", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kubelet", true},
	{"controller-gen", "hack/tools", "sigs.k8s.io/controller-tools", "sigs.k8s.io/controller-tools/cmd/controller-gen", true},
	{"kwok", "hack/tools", "sigs.k8s.io/kwok", "sigs.k8s.io/kwok/cmd/kwok", false},
	{"consul", "hack/tools/consul", "github.com/hashicorp/consul", "github.com/hashicorp/consul", true},
	{"helm", "hack/tools/helm", "helm.sh/helm/v4", "helm.sh/helm/v4/cmd/helm", true},
	{"kruise-manager", "hack/tools/kruise", "github.com/openkruise/kruise", "github.com/openkruise/kruise", true},
	{"krew", "hack/tools/krew", "sigs.k8s.io/krew", "sigs.k8s.io/krew/cmd/krew", true},
	{"prometheus", "hack/tools/prometheus", "github.com/prometheus/prometheus", "github.com/prometheus/prometheus/cmd/prometheus", true},
	{"gotestsum", "hack/tools/gotestsum", "gotest.tools/gotestsum", "gotest.tools/gotestsum", true},
	{"cert-manager", "hack/tools/certmanager", "github.com/cert-manager/cert-manager", "github.com/lifeline-k8s/lifeline/hack/tools/certmanager", true},
}

// BinaryNames lists every binary Binary can return.
func BinaryNames() []string {
	names := make([]string, len(binaries))
	for i, b := range binaries {
		names[i] = b.name
	}
	return names
}

// CacheDir is where built binaries are kept: $LIFELINE_CACHE_DIR, or
// lifeline/ under the user cache folder, so every clone on the machine, CI's
// included, shares them.
func CacheDir() (string, error) {
	if dir := os.Getenv("LIFELINE_CACHE_DIR"); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "lifeline"), nil
}

// RepoRoot finds the repository root by walking up from the working
// directory to the go.mod of the Lifeline module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modfile.ModulePath(data) == "github.com/lifeline-k8s/lifeline" {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no Lifeline go.mod above the working directory")
		}
		dir = parent
	}
}

// Binary returns the path of the named binary, building it into the cache
// first if this version is not there yet. Concurrent callers, in this process
// or others, wait for one build instead of racing.
func Binary(ctx context.Context, name string, progress io.Writer) (string, error) {
	paths, err := BuildBinaries(ctx, []string{name}, progress)
	if err != nil {
		return "", err
	}
	return paths[name], nil
}

// planBinary is where a binary of the pinned version goes in the cache.
func planBinary(name string) (*plannedBinary, error) {
	var b *binary
	for i := range binaries {
		if binaries[i].name == name {
			b = &binaries[i]
		}
	}
	if b == nil {
		return nil, fmt.Errorf("unknown binary %q (known: %s)", name, strings.Join(BinaryNames(), ", "))
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	toolsDir := filepath.Join(root, b.toolsDir)
	version, err := moduleVersion(filepath.Join(toolsDir, "go.mod"), b.module)
	if err != nil {
		return nil, err
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	recipe, err := buildRecipe(b, toolsDir)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, "bin", b.name+"-"+version+recipe)
	return &plannedBinary{binary: b, version: version, toolsDir: toolsDir, dir: dir, path: filepath.Join(dir, b.name)}, nil
}

// linkFlags strip the symbol table and DWARF, as the projects' release
// builds do (a third less to link: 8 s instead of 11 s for
// kube-apiserver), and stamp Kubernetes' binaries with their version, as
// its release builds do: unstamped, they report v0.0.0-master, which a
// chart's kubeVersion constraint refuses and kubectl get nodes shows for
// a kubelet.
func linkFlags(b *binary, version string) []string {
	x := []string{"-s", "-w"}
	if b.module == "k8s.io/kubernetes" {
		major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
		minor, _, _ = strings.Cut(minor, ".")
		for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
			x = append(x, "-X "+pkg+".gitVersion="+version, "-X "+pkg+".gitMajor="+major, "-X "+pkg+".gitMinor="+minor,
				"-X "+pkg+".gitTreeState=clean")
		}
	}
	return []string{"-ldflags=" + strings.Join(x, " ")}
}

// buildRecipe names how a binary is built beside its version, so that a
// cached binary of an older recipe is built again.
// A main of this repository (a wrapper that wires a module's packages) is
// keyed by its source too: changed, it is built again.
func buildRecipe(b *binary, toolsDir string) (string, error) {
	if b.module == "k8s.io/kubernetes" {
		return "-stamped", nil
	}
	if !strings.HasPrefix(b.goPackage, "github.com/lifeline-k8s/lifeline/") {
		return "", nil
	}
	files, err := filepath.Glob(filepath.Join(toolsDir, "*.go"))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
	}
	return fmt.Sprintf("-src%x", h.Sum(nil)[:4]), nil
}

// Binaries returns the paths of all binaries but the on-demand ones, and of
// extra ones, by name, building what is missing (BuildBinaries).
func Binaries(ctx context.Context, progress io.Writer, extra ...string) (map[string]string, error) {
	names := slices.Clone(extra)
	for _, b := range binaries {
		if !b.onDemand {
			names = append(names, b.name)
		}
	}
	return BuildBinaries(ctx, names, progress)
}

// EnvtestAssets returns a folder holding etcd, kube-apiserver and kubectl, the
// layout controller-runtime's envtest expects in KUBEBUILDER_ASSETS.
func EnvtestAssets(ctx context.Context, progress io.Writer) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	var paths []string
	names := []string{"etcd", "kube-apiserver", "kubectl"}
	built, err := BuildBinaries(ctx, names, progress)
	if err != nil {
		return "", err
	}
	for _, name := range names {
		paths = append(paths, built[name])
	}
	// The folder is named after the versioned binaries it links to, so a
	// version bump gets a folder of its own.
	var key []string
	for _, p := range paths {
		key = append(key, filepath.Base(filepath.Dir(p)))
	}
	dir := filepath.Join(cache, "envtest", strings.Join(key, "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, p := range paths {
		link := filepath.Join(dir, filepath.Base(p))
		if target, err := os.Readlink(link); err == nil && target == p {
			continue
		}
		tmp := fmt.Sprintf("%s.%d", link, os.Getpid())
		if err := os.Symlink(p, tmp); err != nil {
			return "", err
		}
		if err := os.Rename(tmp, link); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func moduleVersion(goMod, module string) (string, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(goMod, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", goMod, module)
}

// LockFile takes an exclusive lock on path, saying on progress what it
// waits for (name) when another holder has it, and returns its release.
func LockFile(path string, progress io.Writer, name string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	// Say why nothing happens for minutes when another process (make
	// test's up-front build, another clone's make dev) is building it.
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		fmt.Fprintf(progress, "waiting for %s: another build (this process or another) is preparing it\n", name)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
