package bridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

func startConsul(t *testing.T) string {
	return startRegistry(t, "consul", cluster.ConsulHealth, func(ports []int) []string {
		return cluster.ConsulArgs("registry", [4]int(ports))
	})
}

// consulConfig is the HTTP backend for Consul's agent API, as the README
// and the e2e configure it.
func consulConfig(endpoint, bridge string) HTTPConfig {
	cfg := HTTPConfig{
		Register: HTTPRequest{URL: endpoint + "/v1/agent/service/register", Body: `{"ID": "{{.Namespace}}.{{.Pod}}", "Name": "{{.Namespace}}.{{.Workload}}", ` +
			`"Address": "{{.IP}}", "Port": {{.Port}}, "Meta": {"lifeline-bridge": "{{.Bridge}}", "lifeline-id": "{{.ID}}", "uid": "{{.UID}}"}}`},
		Unregister: HTTPRequest{URL: endpoint + "/v1/agent/service/deregister/{{.Namespace}}.{{.Pod}}"},
		List: &HTTPList{HTTPRequest: HTTPRequest{URL: endpoint + "/v1/agent/services"},
			BridgeField: "Meta.lifeline-bridge", IDField: "Meta.lifeline-id", UIDField: "Meta.uid", IPField: "Address", PortField: "Port"},
		Bridge: bridge,
	}
	cfg.defaults()
	return cfg
}

func TestHTTPRegistryAgainstARealConsul(t *testing.T) {
	ctx := context.Background()
	endpoint := startConsul(t)
	h, err := NewHTTP(consulConfig(endpoint, "unit"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewHTTP(consulConfig(endpoint, "someone-else"))
	if err := h.Check(ctx); err != nil {
		t.Fatal(err)
	}
	inst := Instance{IP: "10.0.0.7", Port: 8080, Pod: "web-abcde", Namespace: "demo", Workload: "web", UID: "uid-1"}
	foreign := Instance{IP: "10.0.0.9", Port: 80, Pod: "api-xyz", Namespace: "demo", Workload: "api", UID: "uid-9"}
	if err := h.Register(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if err := other.Register(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	entries, err := h.Entries(ctx)
	if err != nil || len(entries) != 1 || entries[0].ID != inst.ID() || entries[0].UID != "uid-1" || entries[0].IP != "10.0.0.7" || entries[0].Port != 8080 {
		t.Fatalf("entries %+v (%v), want this bridge's one entry only", entries, err)
	}
	first := entries[0]

	// The pod was replaced by one of the same name: a removal planned for
	// the old one leaves the new entry alone, and RegisterIfAbsent does not
	// overwrite it.
	moved := inst
	moved.IP, moved.UID = "10.0.0.8", "uid-2"
	if err := h.Register(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if err := h.RemoveIfUnchanged(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := h.RegisterIfAbsent(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if entries, _ := h.Entries(ctx); len(entries) != 1 || entries[0].UID != "uid-2" || entries[0].IP != "10.0.0.8" {
		t.Fatalf("the newer entry did not survive: %+v", entries)
	}

	if err := h.Unregister(ctx, inst.ID()); err != nil {
		t.Fatal(err)
	}
	if err := h.Unregister(ctx, inst.ID()); err != nil {
		t.Fatalf("unregistering an absent entry (a 404) must succeed: %v", err)
	}
	if entries, _ := h.Entries(ctx); len(entries) != 0 {
		t.Fatalf("entries after Unregister: %+v", entries)
	}
	if entries, _ := other.Entries(ctx); len(entries) != 1 {
		t.Fatalf("another bridge's entry was touched: %+v", entries)
	}
}

// A header from a file (a mounted Secret's token) is read at each request:
// a rotated token is sent from the next request on.
func TestHTTPHeaderFromAFile(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("X-Consul-Token"))
	}))
	defer srv.Close()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := consulConfig(srv.URL, "unit")
	cfg.Register.HeadersFromFiles = map[string]string{"X-Consul-Token": token}
	if errs := cfg.validate(field.NewPath("http")); len(errs) > 0 {
		t.Fatal(errs)
	}
	h, err := NewHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inst := Instance{IP: "10.0.0.7", Port: 8080, Pod: "web-abcde", Namespace: "demo", Workload: "web", UID: "uid-1"}
	if err := h.Register(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.Register(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Errorf("tokens sent %q, want first then second", got)
	}
	cfg.Register.HeadersFromFiles["X-Consul-Token"] = filepath.Join(t.TempDir(), "missing")
	if errs := cfg.validate(field.NewPath("http")); len(errs) != 1 || !strings.Contains(errs[0].Field, "headersFromFiles[X-Consul-Token]") {
		t.Errorf("a missing token file: %v, want one error naming the header", errs)
	}
}
