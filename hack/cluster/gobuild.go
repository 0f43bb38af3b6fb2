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

// A build of one of the repository's commands as the images ship it
// (static, stripped, for linux and arch), shared by every cluster of every
// test package and by the images: `go build -o` skips the link when the
// file it would write is already up to date, and the link is most of a
// warm build (9 CPU-seconds for the manager, 1 to find it up to date;
// 11-30). Building into each cluster's own folder linked the manager, the
// bridge and the node agent again for each of make test's clusters, and
// the images' binaries again for each test that builds images.
type build struct {
	root, pkg string
	// arch is the binary's GOARCH: this machine's when empty.
	arch string
	// progress gets the compiler's output as it comes, when not nil (a
	// first build is minutes long).
	progress io.Writer
}

// dir is where the build's binaries live, one folder per architecture,
// under the repository's build output (bin/, outside git).
func (b build) dir(arch string) string {
	return filepath.Join(b.root, "bin", "builds", "linux-"+arch)
}

func (b build) goarch(ctx context.Context) string {
	if b.arch != "" {
		return b.arch
	}
	return goEnv(ctx, "GOARCH")
}

// name is the package's file name in the shared folder: its path, so two
// commands of one name never take turns in one file.
func (b build) name() string {
	return strings.NewReplacer("./", "", "/", "_").Replace(b.pkg)
}

// run builds the command into its shared place, one build at a time
// (another package's build of it waits, then finds it up to date), and
// returns its path.
func (b build) run(ctx context.Context) (string, error) {
	arch := b.goarch(ctx)
	dir := b.dir(arch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, b.name())
	progress := b.progress
	if progress == nil {
		progress = io.Discard
	}
	unlock, err := binaries.LockFile(bin+".lock", progress, b.name())
	if err != nil {
		return "", err
	}
	defer unlock()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, b.pkg)
	cmd.Dir = b.root
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if b.progress != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, b.progress), io.MultiWriter(&out, b.progress)
	}
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s: %w\n%s", b.pkg, err, out.String())
	}
	return bin, nil
}

// to builds the command and copies it to dst: each cluster runs a copy of
// its own, so a later build of changed code never writes under a running
// process, and a copy is renamed into place whole.
func (b build) to(ctx context.Context, dst string) error {
	bin, err := b.run(ctx)
	if err != nil {
		return err
	}
	return copyExecutable(bin, dst)
}

func copyExecutable(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // once renamed, nothing is left to remove
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// BuildCommand builds the repository's command pkg into bin as goBuild
// does, quietly: for a test that runs one of the repository's tools.
func BuildCommand(ctx context.Context, root, bin, pkg string) error {
	return build{root: root, pkg: pkg}.to(ctx, bin)
}

// goBuild builds the repository's command pkg into bin, showing the
// compiler's output as it comes (a first build is minutes long). It is
// built as the images ship it (static, stripped), so the clusters run what
// ships and a test that builds the images finds the binaries linked.
func goBuild(ctx context.Context, root, bin, pkg string) error {
	return build{root: root, pkg: pkg, progress: os.Stdout}.to(ctx, bin)
}
