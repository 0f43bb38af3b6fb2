package apimodule

import (
	"path/filepath"
	"strings"
	"testing"
)

const (
	pluginModule = "github.com/lifeline-k8s/lifeline/cmd/kubectl-lifeline"
	pluginDir    = "cmd/kubectl-lifeline"
)

// TestPluginModuleStandsAlone: the plugin's module has no replace
// directive (go install refuses one) and does not pull in
// k8s.io/kubernetes.
func TestPluginModuleStandsAlone(t *testing.T) {
	f := parseMod(t, filepath.Join(repoDir(t, pluginDir), "go.mod"))
	if f.Module.Mod.Path != pluginModule || len(f.Replace) != 0 {
		t.Errorf("module %s with %d replace directives", f.Module.Mod.Path, len(f.Replace))
	}
	for _, r := range f.Require {
		if strings.HasPrefix(r.Mod.Path, "k8s.io/kubernetes") {
			t.Errorf("the plugin module requires %s", r.Mod.Path)
		}
	}
}

// TestPluginInstallsWithGoInstall: a user with Go installs the plugin as
// the README says, `go install <module>@<version>`, from a published
// release (the proxy publish lays out), and kubectl finds it by its name.
func TestPluginInstallsWithGoInstall(t *testing.T) {
	dir, run := stranger(t, "example.com/user")
	gobin := filepath.Join(dir, "bin")
	out := run("env", "GOBIN="+gobin, "go", "install", pluginModule+"@latest")
	help := run(filepath.Join(gobin, "kubectl-lifeline"), "--help")
	for _, want := range []string{"status", "explain", "budget", "rollout", "--kubeconfig", "--namespace"} {
		if !strings.Contains(help, want) {
			t.Errorf("the installed plugin's help lacks %q:\n%s%s", want, out, help)
		}
	}
}
