package bridge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-k8s/lifeline/pkg/hook"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bridge.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig(writeConfig(t, `
cloneSets: {matchLabels: {registry: enabled}}
port: 8080
etcd: {endpoints: ["127.0.0.1:2379"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "registry" || c.Etcd.Prefix != "/services" || c.Etcd.TTL.Duration != 30*time.Second ||
		c.Etcd.LeaseKey != "/lifeline-bridge/registry/lease" || c.Resync.Duration != 30*time.Second {
		t.Errorf("defaults: %+v %+v", c, c.Etcd)
	}
	if f := c.Follow(); len(f) != 1 || f[0].Kind != hook.KindCloneSet || f[0].Selector == nil || f[0].Selector.String() != "registry=enabled" {
		t.Errorf("follow %v", f)
	}
}

func TestLoadConfigWorkloads(t *testing.T) {
	c, err := LoadConfig(writeConfig(t, `
workloads:
- kind: CloneSet
- kind: StatefulSet
  selector: {matchLabels: {registry: enabled}}
- kind: DaemonSet
port: 8080
etcd: {endpoints: ["127.0.0.1:2379"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := c.Follow()
	if len(f) != 3 || f[0].Kind != hook.KindCloneSet || f[0].Selector != nil || f[1].Kind != hook.KindStatefulSet || f[1].Selector.String() != "registry=enabled" ||
		f[2].Kind != hook.KindDaemonSet {
		t.Errorf("follow %v", f)
	}
	_, err = LoadConfig(writeConfig(t, `
cloneSets: {matchLabels: {a: b}}
workloads: [{kind: Deployment}, {kind: CloneSet}, {kind: CloneSet}, {selector: {matchLabels: {"a b": c}}}]
port: 8080
etcd: {endpoints: ["127.0.0.1:2379"]}
`))
	for _, want := range []string{"cloneSets: Forbidden", `workloads[0].kind: Unsupported value: "Deployment"`, "workloads[2].kind: Duplicate",
		"workloads[3].kind: Required", "workloads[3].selector: Invalid"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in: %v", want, err)
		}
	}
}

// Every invalid field is reported at once, each with its path.
func TestLoadConfigReportsEveryError(t *testing.T) {
	_, err := LoadConfig(writeConfig(t, `
name: Not_A_Label
port: 70000
etcd: {endpoints: [], ttl: 1s, prefix: /services, leaseKey: /services/lease}
http: {register: {url: "http://x/{{.Nope"}, unregister: {url: ""}, list: {url: "http://x"}}
`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"name:", "port:", "http: Forbidden", "etcd.endpoints: Required", "etcd.ttl:", "etcd.leaseKey:",
		"http.register.url:", "http.unregister.url: Required", "http.list.bridgeField: Required", "http.list.idField: Required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in: %v", want, err)
		}
	}
}

func TestLoadConfigRejectsUnknownFields(t *testing.T) {
	if _, err := LoadConfig(writeConfig(t, "port: 80\netcd: {endpoints: [x]}\nprefx: /a\n")); err == nil || !strings.Contains(err.Error(), "prefx") {
		t.Fatalf("unknown field: %v", err)
	}
}

func TestLoadConfigNeedsABackendAndAPort(t *testing.T) {
	_, err := LoadConfig(writeConfig(t, "name: r\n"))
	if err == nil || !strings.Contains(err.Error(), "port: Required") || !strings.Contains(err.Error(), "etcd: Required") {
		t.Fatalf("%v", err)
	}
}
