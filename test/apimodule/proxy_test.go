package apimodule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// publish lays out dir as a module proxy (GOPROXY's file:// form) holding
// this repository's public modules as a release would publish them: the
// API, the SDK and the kubectl plugin, a zip, go.mod and info of each, and
// that version as @latest, each go.mod requiring the others at it. It
// returns the proxy's URL.
//
// The version is a pseudo-version named after the trees' contents: the go
// command keeps what it once fetched at a version for good (the module
// cache, and the file lists of its build cache), so a working tree
// published again at the same version would be read as the old one.
func publish(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	version := contentVersion(t, repoDir(t, "api"), repoDir(t, "pkg"), repoDir(t, pluginDir))
	modules := map[string]string{apiModule: repoDir(t, "api"), sdkModule: released(t, repoDir(t, "pkg"), version),
		pluginModule: released(t, repoDir(t, pluginDir), version)}
	for path, src := range modules {
		base := filepath.Join(dir, filepath.FromSlash(path), "@v")
		if err := os.MkdirAll(base, 0o755); err != nil {
			t.Fatal(err)
		}
		zip, err := os.Create(filepath.Join(base, version+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		if err := modzip.CreateFromDir(zip, module.Version{Path: path, Version: version}, src); err != nil {
			t.Fatalf("zip of %s: %v", path, err)
		}
		if err := zip.Close(); err != nil {
			t.Fatal(err)
		}
		goMod, err := os.ReadFile(filepath.Join(src, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		info, _ := json.Marshal(map[string]string{"Version": version, "Time": "2026-01-01T00:00:00Z"})
		files := map[string][]byte{
			filepath.Join(base, version+".mod"):  goMod,
			filepath.Join(base, version+".info"): info,
			filepath.Join(base, "list"):          []byte(version + "\n"),
			filepath.Join(base, "..", "@latest"): info,
		}
		for name, data := range files {
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return "file://" + filepath.ToSlash(dir)
}

// released copies the module in src as its release is cut: its
// requirements of Lifeline's other modules at version, no workspace.
func released(t *testing.T, src, version string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{"go.work", "go.work.sum"} {
		if err := os.Remove(filepath.Join(dst, ws)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	f := parseMod(t, filepath.Join(dst, "go.mod"))
	for _, r := range f.Require {
		if strings.HasPrefix(r.Mod.Path, "github.com/lifeline-k8s/lifeline/") {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.Cleanup()
	mod, err := f.Format()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "go.mod"), mod, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// contentVersion is a pseudo-version whose revision part hashes every
// file under dirs, by path and content.
func contentVersion(t *testing.T, dirs ...string) string {
	t.Helper()
	h := sha256.New()
	for _, root := range dirs {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(filepath.Dir(root), path)
			fmt.Fprintf(h, "%s %d\n", rel, len(data))
			h.Write(data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return "v0.0.0-20260101000000-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// stranger makes a new module outside the repository, as a hook operator's
// author would with `go mod init`, and returns its folder and a runner of
// commands in it. Its go command finds Lifeline's modules in the proxy that
// publish lays out, and every other module where the environment's GOPROXY
// says, as on the author's machine: the test reads nothing that this
// repository's own build happened to leave in the module cache. Lifeline's
// modules are not in the public checksum database, so GONOSUMDB names them.
func stranger(t *testing.T, name string) (string, func(name string, args ...string) string) {
	t.Helper()
	dir := t.TempDir()
	upstream := strings.TrimSpace(goEnv(t, "GOPROXY"))
	// The build flags make test sets (-trimpath) stay: they change nothing
	// of what resolves or compiles, and let Go reuse the packages the rest
	// of make test compiled instead of compiling client-go & co. again.
	env := append(os.Environ(), "GOWORK=off", strings.TrimSpace("GOFLAGS=-buildvcs=false "+os.Getenv("GOFLAGS")),
		"GOPROXY="+publish(t)+","+upstream, "GONOSUMDB=github.com/lifeline-k8s/lifeline")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("go", "mod", "init", name)
	return dir, run
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
