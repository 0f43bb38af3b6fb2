package apimodule

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// publish lays out dir as a module proxy (GOPROXY's file:// form) holding
// this repository's API and SDK modules as a release would publish them: a
// zip, go.mod and info of each at the version the SDK's go.mod requires of
// the API, and that version as @latest. It returns the proxy's URL.
func publish(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	version := apiVersionOfSDK(t)
	for path, src := range map[string]string{apiModule: repoDir(t, "api"), sdkModule: repoDir(t, "pkg")} {
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

// apiVersionOfSDK is the version of the API module that pkg/go.mod requires.
func apiVersionOfSDK(t *testing.T) string {
	t.Helper()
	for _, r := range parseMod(t, filepath.Join(repoDir(t, "pkg"), "go.mod")).Require {
		if r.Mod.Path == apiModule {
			return r.Mod.Version
		}
	}
	t.Fatalf("pkg/go.mod does not require %s", apiModule)
	return ""
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
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false",
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
